#include "tests/testing/memory_cycle_store.h"

#include <algorithm>
#include <tuple>

namespace frugal::testing {

model::PoolId MemoryCluster::AddPool(model::Pool pool) {
  std::lock_guard<std::mutex> lock(mu_);
  if (pool.id == 0) pool.id = next_id_++;
  const auto id = pool.id;
  pools_[id] = std::move(pool);
  return id;
}

model::NodeId MemoryCluster::AddNode(model::Node node, Seconds lease) {
  std::lock_guard<std::mutex> lock(mu_);
  if (node.id == 0) node.id = next_id_++;
  node.lease_expires_at = clock_.Now() + lease;
  const auto id = node.id;
  nodes_[id] = {std::move(node), false};
  return id;
}

model::JobId MemoryCluster::AddJob(model::PendingJob job, int max_attempts) {
  std::lock_guard<std::mutex> lock(mu_);
  if (job.id == 0) job.id = next_id_++;
  if (job.created_at == Timestamp{}) job.created_at = clock_.Now();
  const auto id = job.id;
  Job row;
  row.row = std::move(job);
  row.max_attempts = max_attempts;
  jobs_[id] = std::move(row);
  return id;
}

void MemoryCluster::ExpireNode(model::NodeId id) {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = nodes_.find(id);
  if (it != nodes_.end()) it->second.node.lease_expires_at = clock_.Now();
}

void MemoryCluster::ExpireLeaderLease() {
  std::lock_guard<std::mutex> lock(mu_);
  lease_expires_ = clock_.Now();
}

model::JobState MemoryCluster::StateOf(model::JobId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? model::JobState::kFailed : it->second.state;
}

std::string MemoryCluster::ReasonOf(model::JobId id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const auto it = jobs_.find(id);
  return it == jobs_.end() ? "" : it->second.row.reason;
}

Status MemoryCycleStore::FenceLocked() const {
  const MemoryCluster& c = *cluster_;
  if (term_ == 0 || c.term_ != term_ || c.holder_ != holder_ ||
      c.lease_expires_ <= c.clock_.Now()) {
    return store::NotLeader("term " + std::to_string(term_) + " is not held by " + holder_);
  }
  return Status::Ok();
}

StatusOr<store::LeaderStatus> MemoryCycleStore::TryLeadership(std::chrono::milliseconds ttl) {
  MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  const Timestamp now = c.clock_.Now();
  store::LeaderStatus out;
  if (FenceLocked().ok()) {
    c.lease_expires_ = now + ttl;  // renewed: same term
    out.leader = true;
    out.term = term_;
    return out;
  }
  if (term_ != 0) {
    out.lost_reason = "term " + std::to_string(term_) + " ended";
    term_ = 0;
  }
  if (c.term_ == 0 || c.lease_expires_ <= now) {
    ++c.term_;  // a lapsed lease, even our own, is a new term
    c.holder_ = holder_;
    c.lease_expires_ = now + ttl;
    term_ = c.term_;
    out.acquired = true;
  }
  out.leader = term_ != 0;
  out.term = c.term_;
  return out;
}

Status MemoryCycleStore::ReleaseLeadership() {
  MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  if (FenceLocked().ok()) c.lease_expires_ = c.clock_.Now();
  term_ = 0;
  return Status::Ok();
}

void MemoryCycleStore::EndAttemptLocked(MemoryCluster::Attempt& a, model::AttemptEnd end,
                                        const std::string& node) {
  MemoryCluster& c = *cluster_;
  a.ended = true;
  auto& job = c.jobs_.at(a.row.job_id);
  for (const auto& [id, other] : c.attempts_) {
    if (other.row.job_id == a.row.job_id && !other.ended) return;  // a gang part still runs
  }
  const model::Transition t = model::AfterAttempt(
      {job.failures, job.max_attempts, false, a.row.idle_requeues}, {end, std::nullopt, node});
  job.state = t.to;
  job.row.reason = t.reason;
  job.failures = t.failures;
}

StatusOr<std::vector<store::LostNode>> MemoryCycleStore::SweepLostNodes() {
  MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  RETURN_IF_ERROR(FenceLocked());
  std::vector<store::LostNode> out;
  for (auto& [id, n] : c.nodes_) {
    if (n.lost || n.node.lease_expires_at >= c.clock_.Now()) continue;
    n.lost = true;
    store::LostNode lost{n.node.name, {}, {}};
    for (auto& [aid, a] : c.attempts_) {
      if (a.ended || a.row.node_id != id) continue;
      lost.attempts.push_back(aid);
      lost.jobs.push_back(a.row.job_id);
      EndAttemptLocked(
          a, n.node.under_notice ? model::AttemptEnd::kPreempted : model::AttemptEnd::kNodeLost,
          n.node.name);
    }
    out.push_back(std::move(lost));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

StatusOr<model::Snapshot> MemoryCycleStore::LoadSnapshot(const store::PendingWindow& window) {
  MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  model::Snapshot s;
  s.now = c.clock_.Now();
  // Each team's first `per_team` ready and first `per_team` waiting jobs in claim order;
  // of those the first `max_pending`, every team's n-th before any team's (n+1)-th.
  std::vector<const model::PendingJob*> pending;
  for (const auto& [id, j] : c.jobs_) {
    if (j.state == model::JobState::kPending) pending.push_back(&j.row);
  }
  const auto claim = [](const model::PendingJob* a, const model::PendingJob* b) {
    return std::tie(a->priority_rank, a->id) < std::tie(b->priority_rank, b->id);
  };
  std::sort(pending.begin(), pending.end(), claim);
  std::map<std::pair<model::TeamId, bool>, int> taken;
  std::vector<std::pair<int, const model::PendingJob*>> window_rows;  // (rank in team, job)
  for (const auto* j : pending) {
    int& n = taken[{j->team_id, j->waiting_for.empty()}];
    if (n < window.per_team) window_rows.push_back({n++, j});
  }
  std::stable_sort(window_rows.begin(), window_rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (static_cast<int>(window_rows.size()) > window.max_pending) {
    window_rows.resize(window.max_pending);
  }
  std::vector<const model::PendingJob*> all = std::move(pending);
  pending.clear();
  for (const auto& [rank, j] : window_rows) pending.push_back(j);
  // The focus job, in its place, when the window did not reach it.
  for (const auto* j : all) {
    if (window.focus && j->id == *window.focus &&
        std::find(pending.begin(), pending.end(), j) == pending.end())
      pending.push_back(j);
  }
  std::sort(pending.begin(), pending.end(), claim);
  for (const auto* j : pending) s.pending.push_back(*j);

  for (const auto& [id, a] : c.attempts_) {
    if (a.ended) continue;
    model::RunningAttempt r = a.row;
    r.stopping = a.stop_ordered;
    s.running.push_back(std::move(r));
  }
  for (const auto& [id, n] : c.nodes_) {
    if (c.LiveLocked(n)) s.nodes.push_back(n.node);
  }
  for (const auto& [id, p] : c.pools_) s.pools.push_back(p);
  return s;
}

StatusOr<store::AppliedPlan> MemoryCycleStore::ApplyPlan(const model::Plan& plan) {
  MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  RETURN_IF_ERROR(FenceLocked());
  store::AppliedPlan out;
  for (const auto& act : plan.idle_actions) {
    const auto it = c.attempts_.find(act.attempt_id);
    if (it == c.attempts_.end() || it->second.ended) continue;
    MemoryCluster::Attempt& a = it->second;
    if (act.warn) a.row.idle_warned = true;
    if (act.stop == model::IdleStep::kNone || a.stop_ordered) continue;
    a.stop_ordered = true;
    c.jobs_.at(a.row.job_id).row.reason = act.message;
    ++out.idle_stops;
  }
  // Assignments, a job's parts together in plan order: all or nothing.
  std::vector<model::JobId> order;
  std::map<model::JobId, std::vector<const model::Assignment*>> parts;
  for (const auto& a : plan.assignments) {
    if (parts[a.job_id].empty()) order.push_back(a.job_id);
    parts[a.job_id].push_back(&a);
  }
  for (model::JobId id : order) {
    const auto jt = c.jobs_.find(id);
    if (jt == c.jobs_.end() || jt->second.state != model::JobState::kPending) continue;
    MemoryCluster::Job& job = jt->second;
    const auto& ps = parts[id];
    const int n = static_cast<int>(ps.size());
    if (job.row.nodes != 1 && job.row.nodes != n) continue;
    const bool all_live = std::all_of(ps.begin(), ps.end(), [&](const model::Assignment* a) {
      const auto nt = c.nodes_.find(a->node_id);
      return nt != c.nodes_.end() && c.LiveLocked(nt->second) && !nt->second.node.under_notice;
    });
    if (!all_live) continue;
    for (const model::Assignment* a : ps) {
      const model::Node& node = c.nodes_.at(a->node_id).node;
      MemoryCluster::Attempt at;
      at.row.attempt_id = c.next_id_++;
      at.row.job_id = id;
      at.row.node_id = node.id;
      at.row.node_name = node.name;
      at.row.pool_id = node.pool_id;
      at.row.gpus = a->gpus;
      at.row.gang_size = n;
      at.row.team_id = job.row.team_id;
      at.row.priority_rank = job.row.priority_rank;
      at.row.tolerance = job.row.tolerance;
      at.row.deadline = job.row.deadline;
      at.row.estimate = job.row.estimate;
      at.row.started_at = c.clock_.Now();
      c.attempts_[at.row.attempt_id] = std::move(at);
    }
    job.state = model::JobState::kRunning;
    job.row.reason = ps.front()->reason;
    ++out.started;
  }
  for (const auto& w : plan.waits) {
    const auto jt = c.jobs_.find(w.job_id);
    if (jt != c.jobs_.end() && jt->second.state == model::JobState::kPending) {
      jt->second.row.reason = w.reason;
    }
  }
  for (const auto& h : plan.holds) {
    const auto jt = c.jobs_.find(h.job_id);
    if (jt != c.jobs_.end() && jt->second.state == model::JobState::kPending) {
      jt->second.state = model::JobState::kHeld;
      jt->second.row.reason = h.reason;
    }
  }
  for (const auto& st : plan.stops) {
    const auto it = c.attempts_.find(st.attempt_id);
    if (it == c.attempts_.end() || it->second.ended || it->second.stop_ordered) continue;
    it->second.stop_ordered = true;
    c.jobs_.at(it->second.row.job_id).row.reason = st.reason;
  }
  return out;  // no budgets here, so no alerts
}

}  // namespace frugal::testing
