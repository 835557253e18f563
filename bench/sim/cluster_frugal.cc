// Frugal in the cluster engine: the snapshot the real engine would load from PostgreSQL,
// built from the simulated cluster, and the plan applied as ApplyPlan would apply it.
#include <algorithm>
#include <cmath>
#include <map>

#include "bench/sim/cluster_policies.h"
#include "bench/sim/frugal_controller.h"
#include "scheduler/policy/cycle.h"

namespace frugal::sim {

namespace {

constexpr std::int64_t kEpochSeconds = 1672531200;  // 2023-01-01: only differences matter
constexpr int kPoolIdOffset = 1;   // pool ids must be non-zero: cluster pool i is id i + 1
constexpr int kJobIdOffset = 1;    // job ids likewise

Timestamp At(int minute) { return Timestamp{} + Seconds(kEpochSeconds + minute * 60LL); }
Seconds Minutes(int m) { return Seconds(m * 60LL); }

}  // namespace

model::Snapshot FrugalCluster::SnapshotOf(const Cluster& c) const {
  const ClusterSetup& setup = c.setup();
  model::Snapshot s;
  s.now = At(c.now());
  for (const auto& p : c.pools()) {
    if (p.kind == model::CapacityKind::kReserved && !setup.use_reserved) continue;
    model::Pool m;
    m.id = p.id + kPoolIdOffset;
    m.name = p.name;
    m.kind = p.kind;
    m.gpu_type = "V100";
    m.gpu_mem_gb = 16;
    m.price_per_gpu_hour = static_cast<Micros>(std::llround(c.PoolPrice(p.id) * 1e6));
    m.startup_delay = Minutes(setup.startup);
    m.idle_timeout = Minutes(5);
    if (p.kind == model::CapacityKind::kReserved) {
      m.max_gpus = setup.reserved_gpus;
    } else {
      // The provider's annotation: on-demand grows without limit; a spot zone grows only
      // while it has capacity (a launch there would fail otherwise), up to its cap.
      m.elastic = p.zone < 0 || c.ZoneUp(p.zone);
      m.max_gpus = p.zone < 0 ? 1 << 20 : p.cap_gpus;
      m.requested_gpus = c.PoolGpus(p.id, true);
    }
    if (p.kind == model::CapacityKind::kSpot) {
      m.preemption_prior_per_node_hour = prior_;
      m.preemption_rate_per_node_hour =
          model::LearnedPreemptionRate(prior_, c.PoolReclaims(p.id), c.PoolNodeHours(p.id));
      const Market& market = setup.spot;
      const int step = c.MarketStep();
      const int end = OnlineFitEnd(market, step);
      if (end > 0) {
        auto& fitted = models_[{p.zone, end}];
        if (!fitted) fitted = FitModel(market, p.zone, end);
        m.availability = fitted;
      }
      const bool up = market.Up(p.zone, step);
      int age = 0;
      for (int j = step - 1; j >= 0 && market.Up(p.zone, j) == up && age < 100000; --j) ++age;
      m.availability_now = {up, static_cast<std::int64_t>(age) * market.step_seconds};
    }
    s.pools.push_back(m);
  }
  for (const auto& n : c.nodes()) {
    if (!n.live) continue;
    model::Node m;
    m.id = n.id;
    m.name = "n";
    m.name.append(std::to_string(n.id));
    m.pool_id = n.pool + kPoolIdOffset;
    m.gpus = n.gpus;
    m.gpu_type = "V100";
    m.gpu_mem_gb = 16;
    m.lease_expires_at = s.now + Seconds(60);
    if (n.free == n.gpus) m.idle_since = At(n.idle_since);
    s.nodes.push_back(m);
  }
  auto common = [&](const ClusterJob& j, auto& x) {
    x.gpus = j.gpus;
    x.priority_rank = j.rank;
    x.tolerance = j.tolerance;
    x.deadline = At(j.deadline);
    x.estimate = Minutes(j.work);
    if (j.tolerance == model::Tolerance::kCheckpointed) x.checkpoint_interval = Minutes(j.checkpoint);
    x.progress = static_cast<double>(j.saved) / j.work;
  };
  for (int idx : c.pending()) {
    const ClusterJob& j = c.jobs()[idx];
    model::PendingJob p;
    p.id = j.id + kJobIdOffset;
    p.team_id = 1;
    p.created_at = At(j.arrival);
    common(j, p);
    s.pending.push_back(p);
  }
  // The store orders pending jobs by (priority, id).
  std::stable_sort(s.pending.begin(), s.pending.end(), [](const auto& a, const auto& b) {
    return a.priority_rank != b.priority_rank ? a.priority_rank < b.priority_rank : a.id < b.id;
  });
  std::map<int, int> pool_of;
  for (const auto& n : c.nodes()) pool_of[n.id] = n.pool;
  for (const auto& j : c.jobs()) {
    if (j.state != ClusterJob::State::kRunning) continue;
    model::RunningAttempt a;
    a.attempt_id = static_cast<model::AttemptId>(j.id) * 1000 + j.attempts;
    a.job_id = j.id + kJobIdOffset;
    a.node_id = j.node;
    a.pool_id = pool_of[j.node] + kPoolIdOffset;
    a.team_id = 1;
    a.started_at = At(j.attempt_start);
    if (j.last_checkpoint >= 0) a.last_checkpoint_at = At(j.last_checkpoint);
    if (j.last_priority_stop >= 0) a.last_priority_preemption_at = At(j.last_priority_stop);
    common(j, a);
    s.running.push_back(a);
  }
  return s;
}

void FrugalCluster::Cycle(Cluster& c) {
  ++cycles_;
  // The scheduler's whole decision step (policy/cycle.h): quotas and hard budgets apply here
  // as in the engine (a full cycle: the timer's, which may release). The simulated attempts
  // report no GPU use, so the idle guardrail never acts here.
  model::Snapshot snapshot = SnapshotOf(c);
  model::Plan plan = policy::DecideCycle(snapshot, *policy_, policy::CycleDepth::kFull);
  for (const auto& stop : plan.stops)
    c.Stop(static_cast<int>(stop.job_id - kJobIdOffset), stop.kind == model::StopKind::kPriorityPreemption);
  for (const auto& a : plan.assignments)
    c.Start(static_cast<int>(a.job_id - kJobIdOffset), static_cast<int>(a.node_id));
  // The provider sizes a node to each job a request is for that has none starting, as the
  // baselines' providers do (a node of a fixed size would idle the rest of it), in plan
  // order, until the request's GPUs (net of nodes still starting) are covered. Whatever the
  // jobs do not explain comes in nodes of max_node_gpus.
  for (auto it = starting_for_.begin(); it != starting_for_.end();) {
    bool starting = false;
    for (const auto& n : c.nodes()) starting = starting || (n.id == it->second && !n.live);
    it = starting ? std::next(it) : starting_for_.erase(it);
  }
  for (const auto& r : plan.node_requests) {
    const int pool = static_cast<int>(r.pool_id - kPoolIdOffset);
    int left = r.gpus;
    for (model::JobId id : r.job_ids) {
      if (left <= 0) break;
      const int job = static_cast<int>(id - kJobIdOffset);
      if (starting_for_.count(job)) continue;
      const int node = c.Launch(pool, c.jobs()[job].gpus);
      if (node < 0) break;  // the zone is down or at its cap
      starting_for_[job] = node;
      left -= c.jobs()[job].gpus;
    }
    for (; left > 0; left -= c.setup().max_node_gpus)
      if (c.Launch(pool, std::min(left, c.setup().max_node_gpus)) < 0) break;
  }
  for (const auto& r : plan.node_releases) c.Release(static_cast<int>(r.node_id));
}

}  // namespace frugal::sim
