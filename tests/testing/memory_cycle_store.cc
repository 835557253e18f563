#include "tests/testing/memory_cycle_store.h"

#include <algorithm>
#include <set>
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
  row.updated_at = row.row.created_at;
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

void MemoryCluster::EventLocked(Job& job, const std::string& kind, model::JobState from,
                                model::JobState to, const std::string& message) {
  const Timestamp now = clock_.Now();
  job.events.push_back({next_event_id_++, job.row.id, now, kind,
                        kind == "submitted" ? "" : model::ToString(from), model::ToString(to),
                        message});
  job.updated_at = now;
}

std::vector<model::PendingJob> MemoryCluster::PendingLocked(std::optional<model::JobId> also) const {
  // A throttled array's pending tasks may take its room (max_running less those running),
  // lowest index first; the rest wait unseen.
  std::map<std::int64_t, int> room;
  for (const auto& [id, a] : arrays_) {
    if (a.max_running) room[id] = *a.max_running;
  }
  std::map<std::int64_t, std::vector<std::pair<int, model::JobId>>> throttled;
  for (const auto& [id, j] : jobs_) {
    if (!j.array_id || !room.count(*j.array_id)) continue;
    if (j.state == model::JobState::kRunning) --room[*j.array_id];
    if (j.state == model::JobState::kPending) {
      throttled[*j.array_id].push_back({*j.array_index, id});
    }
  }
  std::set<model::JobId> allowed;
  for (auto& [array, tasks] : throttled) {
    std::sort(tasks.begin(), tasks.end());
    for (int i = 0; i < room[array] && i < static_cast<int>(tasks.size()); ++i) {
      allowed.insert(tasks[i].second);
    }
  }
  const auto open = [&](model::JobId dep) {
    const auto it = jobs_.find(dep);
    return it != jobs_.end() && (it->second.state == model::JobState::kPending ||
                                 it->second.state == model::JobState::kHeld ||
                                 it->second.state == model::JobState::kRunning);
  };
  const auto failed = [&](model::JobId dep) {
    const auto it = jobs_.find(dep);
    return it != jobs_.end() && (it->second.state == model::JobState::kFailed ||
                                 it->second.state == model::JobState::kCancelled ||
                                 it->second.state == model::JobState::kTimedOut);
  };
  std::vector<model::PendingJob> out;
  for (const auto& [id, j] : jobs_) {
    if (j.state != model::JobState::kPending) continue;
    if (j.array_id && room.count(*j.array_id) && !allowed.count(id) && id != also) continue;
    model::PendingJob p = j.row;
    for (const auto* deps : {&j.spec.after, &j.spec.after_any}) {
      for (model::JobId d : *deps) {
        if (open(d)) p.waiting_for.push_back(d);
      }
    }
    std::sort(p.waiting_for.begin(), p.waiting_for.end());
    p.waiting_for.erase(std::unique(p.waiting_for.begin(), p.waiting_for.end()),
                        p.waiting_for.end());
    for (model::JobId d : j.spec.after) {  // after_any is not in spec.after (the queue port)
      if (failed(d) && (!p.failed_dependency || d < *p.failed_dependency)) {
        p.failed_dependency = d;
      }
    }
    out.push_back(std::move(p));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.priority_rank, a.id) < std::tie(b.priority_rank, b.id);
  });
  return out;
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
  a.ended_at = c.clock_.Now();
  a.end_reason = model::ToString(end);
  auto& job = c.jobs_.at(a.row.job_id);
  for (const auto& [id, other] : c.attempts_) {
    if (other.row.job_id == a.row.job_id && !other.ended) return;  // a gang part still runs
  }
  const model::Transition t = model::AfterAttempt(
      {job.failures, job.max_attempts, job.cancel_requested, a.row.idle_requeues},
      {end, std::nullopt, node});
  c.EventLocked(job, "state_changed", job.state, t.to, t.reason);
  job.state = t.to;
  job.row.reason = t.reason;
  job.failures = t.failures;
  if (model::IsTerminal(t.to)) job.finished_at = c.clock_.Now();
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
  std::vector<model::PendingJob> pending = c.PendingLocked();
  std::map<std::pair<model::TeamId, bool>, int> taken;
  std::vector<std::pair<int, std::size_t>> window_rows;  // (rank in team, index in pending)
  for (std::size_t i = 0; i < pending.size(); ++i) {
    int& n = taken[{pending[i].team_id, pending[i].waiting_for.empty()}];
    if (n < window.per_team) window_rows.push_back({n++, i});
  }
  std::stable_sort(window_rows.begin(), window_rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  if (static_cast<int>(window_rows.size()) > window.max_pending) {
    window_rows.resize(window.max_pending);
  }
  std::vector<std::size_t> chosen;
  for (const auto& [rank, i] : window_rows) chosen.push_back(i);
  std::sort(chosen.begin(), chosen.end());  // `pending` is in claim order
  bool focus_seen = false;
  for (std::size_t i : chosen) {
    focus_seen = focus_seen || (window.focus && pending[i].id == *window.focus);
    s.pending.push_back(std::move(pending[i]));
  }
  // The focus job, in its place, when the window did not reach it: any pending job, a
  // throttled array's task beyond its room included, as PostgreSQL reads it by id.
  if (window.focus && !focus_seen) {
    for (auto& j : c.PendingLocked(window.focus)) {
      if (j.id != *window.focus) continue;
      auto at = std::find_if(s.pending.begin(), s.pending.end(), [&](const model::PendingJob& o) {
        return std::tie(o.priority_rank, o.id) > std::tie(j.priority_rank, j.id);
      });
      s.pending.insert(at, std::move(j));
    }
  }

  for (const auto& [id, a] : c.attempts_) {
    if (a.ended) continue;
    model::RunningAttempt r = a.row;
    r.stopping = a.stop_ordered || c.jobs_.at(a.row.job_id).cancel_requested;
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
    ++job.attempts;
    int rank = 0;
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
      at.number = job.attempts;
      at.rank = rank++;
      c.attempts_[at.row.attempt_id] = std::move(at);
    }
    c.EventLocked(job, "state_changed", job.state, model::JobState::kRunning, ps.front()->reason);
    if (!job.started_at) job.started_at = c.clock_.Now();
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
      c.EventLocked(jt->second, "state_changed", model::JobState::kPending, model::JobState::kHeld,
                    h.reason);
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
