#include "bench/sim/cluster_sim.h"

#include <algorithm>
#include <map>

namespace frugal::sim {

namespace {
constexpr int kReservedPool = 0, kOnDemandPool = 1, kFirstSpotPool = 2;
constexpr int kTimerMinutes = 5;  // a cycle at least this often, besides event kicks
}  // namespace

Cluster::Cluster(const ClusterSetup& setup, bool use_reserved) : setup_(setup), jobs_(setup.jobs) {
  setup_.use_reserved = use_reserved;
  pools_.push_back({kReservedPool, "reserved", model::CapacityKind::kReserved,
                    setup.reserved_price, -1, 0});
  pools_.push_back({kOnDemandPool, "on-demand", model::CapacityKind::kOnDemand, setup.od_price, -1, 0});
  for (int z = 0; z < static_cast<int>(setup.spot.zones.size()); ++z)
    pools_.push_back({kFirstSpotPool + z, "spot-" + setup.spot.zones[z].name,
                      model::CapacityKind::kSpot, 0, z, setup.spot_cap_gpus});
  reclaims_.assign(pools_.size(), 0);
  node_hours_.assign(pools_.size(), 0);
  if (use_reserved) {
    for (int left = setup.reserved_gpus; left > 0; left -= setup.reserved_node_gpus) {
      ClusterNode n;
      n.id = next_node_++;
      n.pool = kReservedPool;
      n.gpus = n.free = std::min(left, setup.reserved_node_gpus);
      n.live = true;
      nodes_.push_back(n);
    }
  }
}

int Cluster::MarketStep() const { return setup_.spot.StepAtMinute(now_); }

bool Cluster::ZoneUp(int zone) const {
  return setup_.spot.steps > 0 && setup_.spot.Up(zone, MarketStep());
}

double Cluster::PoolPrice(int pool) const {
  const ClusterPool& p = pools_[pool];
  if (p.zone < 0) return p.price;
  const Market& m = setup_.spot;
  return m.Price(p.zone, MarketStep()) / std::max(1, m.gpus_per_instance);
}

int Cluster::PoolGpus(int pool, bool launching_only) const {
  int g = 0;
  for (const auto& n : nodes_)
    if (n.pool == pool && (!launching_only || !n.live)) g += n.gpus;
  return g;
}

ClusterNode* Cluster::Node(int id) {
  for (auto& n : nodes_)
    if (n.id == id) return &n;
  return nullptr;
}

bool Cluster::Start(int job, int node_id) {
  ClusterJob& j = jobs_[job];
  ClusterNode* n = Node(node_id);
  if (j.state != ClusterJob::State::kPending || !n || !n->live || n->free < j.gpus) return false;
  if (j.tolerance == model::Tolerance::kNone && pools_[n->pool].kind == model::CapacityKind::kSpot)
    return false;
  n->free -= j.gpus;
  j.state = ClusterJob::State::kRunning;
  j.node = node_id;
  j.progress = j.saved;
  j.attempt_start = now_;
  j.run_in_attempt = 0;
  j.restore_left = j.saved > 0 ? setup_.restore : 0;
  ++j.attempts;
  if (j.first_start < 0) j.first_start = now_;
  pending_.erase(std::find(pending_.begin(), pending_.end(), job));
  return true;
}

void Cluster::EndAttempt(ClusterJob& j, bool keep_progress) {
  ClusterNode* n = Node(j.node);
  if (n) {
    n->free += j.gpus;
    if (n->free == n->gpus) n->idle_since = now_;
  }
  if (!keep_progress) {
    j.lost_gpu_minutes += static_cast<double>(j.progress - j.saved) * j.gpus;
    j.progress = j.saved;
  }
  j.state = ClusterJob::State::kPending;
  j.node = -1;
  auto pos = std::lower_bound(pending_.begin(), pending_.end(), j.id, [&](int a, int b) {
    return jobs_[a].arrival != jobs_[b].arrival ? jobs_[a].arrival < jobs_[b].arrival : a < b;
  });
  pending_.insert(pos, j.id);
  if (n && n->for_job == j.id) RemoveNode(n->id);
  event_ = true;
}

bool Cluster::Stop(int job, bool priority) {
  ClusterJob& j = jobs_[job];
  if (j.state != ClusterJob::State::kRunning) return false;
  // A stop order lets a checkpointed job checkpoint first; a restartable job loses its run.
  bool checkpoints = j.tolerance == model::Tolerance::kCheckpointed && j.restore_left == 0;
  if (checkpoints) {
    j.saved = j.progress;
    j.last_checkpoint = now_;
  }
  if (priority) j.last_priority_stop = now_;
  EndAttempt(j, checkpoints);
  return true;
}

int Cluster::Launch(int pool, int gpus, int for_job) {
  if (pool <= kReservedPool || pool >= static_cast<int>(pools_.size()) || gpus <= 0) return -1;
  const ClusterPool& p = pools_[pool];
  if (p.zone >= 0) {
    if (!ZoneUp(p.zone)) return -1;
    if (p.cap_gpus > 0 && PoolGpus(pool, false) + gpus > p.cap_gpus) return -1;
  }
  ClusterNode n;
  n.id = next_node_++;
  n.pool = pool;
  n.gpus = n.free = gpus;
  n.launched = now_;
  n.live_at = now_ + setup_.startup;
  n.for_job = for_job;
  nodes_.push_back(n);
  return n.id;
}

void Cluster::RemoveNode(int id) {
  nodes_.erase(std::remove_if(nodes_.begin(), nodes_.end(), [&](const ClusterNode& n) { return n.id == id; }),
               nodes_.end());
}

bool Cluster::Release(int node_id) {
  ClusterNode* n = Node(node_id);
  if (!n || n->pool == kReservedPool || n->free != n->gpus) return false;
  RemoveNode(node_id);
  return true;
}

void Cluster::Step() {
  // Work and checkpoints of running jobs, then completions (which end in this minute).
  for (auto& j : jobs_) {
    if (j.state != ClusterJob::State::kRunning) continue;
    const ClusterNode* n = Node(j.node);
    if (n && n->pool == kReservedPool && now_ < setup_.window) reserved_used_ += j.gpus / 60.0;
    if (j.restore_left > 0) {
      --j.restore_left;
      continue;
    }
    ++j.progress;
    ++j.run_in_attempt;
    if (j.tolerance == model::Tolerance::kCheckpointed && j.checkpoint > 0 &&
        j.run_in_attempt % j.checkpoint == 0) {
      j.saved = j.progress;
      j.last_checkpoint = now_ + 1;
    }
  }
  for (auto& n : nodes_) {
    if (n.pool == kReservedPool) continue;
    double c = PoolPrice(n.pool) * n.gpus / 60.0;
    n.cost += c;
    (pools_[n.pool].zone >= 0 ? spot_cost_ : od_cost_) += c;
    if (n.live) node_hours_[n.pool] += 1.0 / 60;
  }
  ++now_;
  for (auto& j : jobs_) {
    if (j.state != ClusterJob::State::kRunning || j.progress < j.work) continue;
    j.state = ClusterJob::State::kDone;
    j.finish = now_;
    ++done_;
    ClusterNode* n = Node(j.node);
    if (n) {
      n->free += j.gpus;
      if (n->free == n->gpus) n->idle_since = now_;
      if (n->for_job == j.id) RemoveNode(n->id);
    }
    event_ = true;
  }
}

ClusterResult Cluster::Run(ClusterPolicy& policy) {
  int limit = 0;
  for (const auto& j : jobs_) limit = std::max(limit, j.deadline + j.work);
  limit += 3 * 24 * 60;
  for (; done_ < static_cast<int>(jobs_.size()) && now_ < limit;) {
    // Reclaims: a zone that is down takes back every node it lent.
    for (const auto& p : pools_) {
      if (p.zone < 0 || ZoneUp(p.zone)) continue;
      std::vector<int> gone;
      for (const auto& n : nodes_)
        if (n.pool == p.id) gone.push_back(n.id);
      for (int id : gone) {
        for (auto& j : jobs_)
          if (j.state == ClusterJob::State::kRunning && j.node == id) EndAttempt(j, false);
        RemoveNode(id);
        reclaims_[p.id] += 1;
        ++reclaim_count_;
        event_ = true;
      }
    }
    for (auto& n : nodes_)
      if (!n.live && n.live_at <= now_) {
        n.live = true;
        n.idle_since = now_;
        event_ = true;
      }
    while (next_arrival_ < static_cast<int>(jobs_.size()) && jobs_[next_arrival_].arrival <= now_) {
      jobs_[next_arrival_].state = ClusterJob::State::kPending;
      pending_.push_back(next_arrival_++);
      event_ = true;
    }
    if (event_ || now_ % kTimerMinutes == 0) {
      event_ = false;
      policy.Cycle(*this);
    }
    Step();
  }
  ClusterResult r;
  r.policy = policy.Name();
  r.od_cost = od_cost_;
  r.spot_cost = spot_cost_;
  if (setup_.use_reserved)
    r.reserved_cost = setup_.reserved_gpus * setup_.reserved_price * setup_.window / 60.0;
  r.cost = r.od_cost + r.spot_cost + r.reserved_cost;
  r.reserved_used_gpu_hours = reserved_used_;
  double reserved_hours = setup_.reserved_gpus * setup_.window / 60.0;
  r.reserved_utilisation = setup_.use_reserved && reserved_hours > 0 ? reserved_used_ / reserved_hours : 0;
  r.reclaims = reclaim_count_;
  r.jobs = static_cast<int>(jobs_.size());
  std::map<std::string, std::pair<int, int>> classes;
  double wait = 0;
  int started = 0;
  for (const auto& j : jobs_) {
    r.lost_gpu_hours += j.lost_gpu_minutes / 60;
    if (j.first_start >= 0) wait += j.first_start - j.arrival, ++started;
    auto& c = classes[j.qos];
    ++c.first;
    if (j.state == ClusterJob::State::kDone && j.finish <= j.deadline) ++c.second;
    if (j.state != ClusterJob::State::kDone) ++r.unfinished;
  }
  r.mean_wait_minutes = started ? wait / started : 0;
  for (const auto& [name, c] : classes) {
    r.classes.push_back(name);
    r.class_jobs.push_back(c.first);
    r.class_hits.push_back(c.second);
  }
  return r;
}

}  // namespace frugal::sim
