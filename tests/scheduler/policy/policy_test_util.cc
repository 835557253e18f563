#include "policy_test_util.h"

#include <algorithm>
#include <map>
#include <set>

namespace frugal::policy::testing {

Timestamp T0() { return Timestamp{} + 1767225600s; }
Timestamp At(Seconds offset) { return T0() + offset; }

model::Pool MakePool(model::PoolId id, const std::string& name, model::CapacityKind kind,
                     const std::string& type, double price_dollars, double speed, int mem,
                     int max_gpus) {
  model::Pool p;
  p.id = id;
  p.name = name;
  p.kind = kind;
  p.gpu_type = type;
  p.gpu_mem_gb = mem;
  p.speed = speed;
  p.price_per_gpu_hour = static_cast<Micros>(price_dollars * 1e6 + 0.5);
  p.max_gpus = max_gpus;
  return p;
}

model::Node MakeNode(model::NodeId id, model::PoolId pool, int gpus, const std::string& type,
                     int mem) {
  model::Node n;
  n.id = id;
  n.name = "node-" + std::to_string(id);
  n.pool_id = pool;
  n.gpus = gpus;
  n.gpu_type = type;
  n.gpu_mem_gb = mem;
  n.lease_expires_at = At(1h);
  return n;
}

model::PendingJob MakeJob(model::JobId id, int gpus, int rank, model::Tolerance tolerance) {
  model::PendingJob j;
  j.id = id;
  j.team_id = 1;
  j.gpus = gpus;
  j.priority_rank = rank;
  j.tolerance = tolerance;
  j.created_at = T0();
  return j;
}

model::RunningAttempt MakeRunning(model::AttemptId attempt, model::JobId job, model::NodeId node,
                                  int gpus, int rank) {
  model::RunningAttempt r;
  r.attempt_id = attempt;
  r.job_id = job;
  r.node_id = node;
  r.gpus = gpus;
  r.priority_rank = rank;
  r.started_at = At(-2h);
  return r;
}

std::vector<std::string> PlanViolations(const model::Snapshot& s, const model::Plan& plan) {
  std::vector<std::string> out;
  auto bad = [&](const std::string& what) { out.push_back(what); };
  std::map<model::NodeId, const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes[n.id] = &n;
  std::map<model::PoolId, const model::Pool*> pools;
  for (const auto& p : s.pools) pools[p.id] = &p;
  std::map<model::JobId, const model::PendingJob*> jobs;
  for (const auto& j : s.pending) jobs[j.id] = &j;
  std::map<model::AttemptId, const model::RunningAttempt*> attempts;
  std::map<model::NodeId, int> node_used;
  std::map<model::PoolId, int> pool_used;
  for (const auto& r : s.running) {
    attempts[r.attempt_id] = &r;
    auto n = nodes.find(r.node_id);
    if (n == nodes.end()) continue;
    node_used[r.node_id] += r.gpus;
    pool_used[n->second->pool_id] += r.gpus;
  }
  std::map<model::JobId, int> decisions, gang_gpus;
  std::map<model::JobId, std::set<model::PoolId>> gang_pools;
  std::map<model::JobId, std::set<model::NodeId>> gang_nodes;
  std::map<model::NodeId, int> node_new;
  std::map<model::PoolId, int> pool_new;
  for (const auto& a : plan.assignments) {
    std::string tag = "job " + std::to_string(a.job_id) + ": ";
    if (a.reason.empty()) bad(tag + "assignment without a reason");
    auto j = jobs.find(a.job_id);
    auto n = nodes.find(a.node_id);
    if (j == jobs.end()) {
      bad(tag + "assigned but not pending");
      continue;
    }
    if (n == nodes.end()) {
      bad(tag + "assigned to a node that is not live");
      continue;
    }
    const auto& job = *j->second;
    const auto& node = *n->second;
    if (job.failed_dependency || !job.waiting_for.empty()) bad(tag + "assigned before deps");
    if (!gang_nodes[a.job_id].insert(a.node_id).second) bad(tag + "same node twice");
    if (a.gpus <= 0) bad(tag + "assignment of no GPUs");
    if (node.under_notice) bad(tag + "placed on a node under notice");
    if (!job.gpu_types.empty() &&
        std::find(job.gpu_types.begin(), job.gpu_types.end(), node.gpu_type) == job.gpu_types.end())
      bad(tag + "wrong GPU type");
    if (job.min_gpu_mem_gb && node.gpu_mem_gb < *job.min_gpu_mem_gb) bad(tag + "too little memory");
    auto p = pools.find(node.pool_id);
    if (p != pools.end() && p->second->kind == model::CapacityKind::kSpot &&
        job.tolerance == model::Tolerance::kNone)
      bad(tag + "tolerance none on spot");
    gang_gpus[a.job_id] += a.gpus;
    gang_pools[a.job_id].insert(node.pool_id);
    node_new[a.node_id] += a.gpus;
    pool_new[node.pool_id] += a.gpus;
  }
  for (const auto& [id, gpus] : gang_gpus) {
    ++decisions[id];
    if (gpus != jobs[id]->gpus)
      bad("job " + std::to_string(id) + ": gang of " + std::to_string(jobs[id]->gpus) + " got " +
          std::to_string(gpus) + " GPU(s)");
    if (gang_pools[id].size() != 1) bad("job " + std::to_string(id) + ": gang across pools");
  }
  for (const auto& [id, gpus] : node_new) {
    if (gpus > std::max(0, nodes[id]->gpus - node_used[id]))
      bad("node " + std::to_string(id) + ": over capacity");
  }
  for (const auto& [id, gpus] : pool_new) {
    auto p = pools.find(id);
    if (p != pools.end() && p->second->max_gpus > 0 &&
        gpus > std::max(0, p->second->max_gpus - pool_used[id]))
      bad("pool " + std::to_string(id) + ": over max_gpus");
  }
  for (const auto* list : {&plan.waits, &plan.holds}) {
    for (const auto& w : *list) {
      ++decisions[w.job_id];
      if (w.reason.empty()) bad("job " + std::to_string(w.job_id) + ": decision without reason");
      if (!jobs.count(w.job_id)) bad("job " + std::to_string(w.job_id) + ": not pending");
    }
  }
  for (const auto& j : s.pending) {
    if (decisions[j.id] != 1)
      bad("job " + std::to_string(j.id) + ": " + std::to_string(decisions[j.id]) + " decisions");
  }
  std::set<model::AttemptId> stopped;
  for (const auto& st : plan.stops) {
    std::string tag = "stop " + std::to_string(st.attempt_id) + ": ";
    auto a = attempts.find(st.attempt_id);
    if (a == attempts.end()) {
      bad(tag + "not running");
      continue;
    }
    if (a->second->job_id != st.job_id) bad(tag + "wrong job");
    if (!stopped.insert(st.attempt_id).second) bad(tag + "stopped twice");
    if (st.reason.empty()) bad(tag + "no reason");
    if (a->second->stopping) bad(tag + "already stopping");
    if (a->second->tolerance == model::Tolerance::kNone) bad(tag + "tolerance none stopped");
  }
  for (const auto& r : plan.node_requests) {
    auto p = pools.find(r.pool_id);
    if (p == pools.end() || !p->second->elastic) bad("request for a pool that cannot grow");
    if (r.gpus <= 0 || r.reason.empty()) bad("empty node request");
  }
  for (const auto& r : plan.node_releases) {
    auto n = nodes.find(r.node_id);
    if (n == nodes.end()) {
      bad("release of an unknown node");
      continue;
    }
    auto p = pools.find(n->second->pool_id);
    if (p != pools.end() && p->second->kind == model::CapacityKind::kReserved)
      bad("release of a reserved node");
    if (node_used[r.node_id] > 0 || node_new[r.node_id] > 0) bad("release of a busy node");
    if (r.reason.empty()) bad("release without a reason");
  }
  return out;
}

bool SamePlan(const model::Plan& a, const model::Plan& b) {
  auto same_waits = [](const std::vector<model::Wait>& x, const std::vector<model::Wait>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].job_id != y[i].job_id || x[i].reason != y[i].reason) return false;
    return true;
  };
  if (a.assignments.size() != b.assignments.size() || a.stops.size() != b.stops.size() ||
      a.node_requests.size() != b.node_requests.size() ||
      a.node_releases.size() != b.node_releases.size())
    return false;
  for (size_t i = 0; i < a.assignments.size(); ++i) {
    const auto &x = a.assignments[i], &y = b.assignments[i];
    if (x.job_id != y.job_id || x.node_id != y.node_id || x.gpus != y.gpus ||
        x.reason != y.reason || x.expected_cost != y.expected_cost)
      return false;
  }
  for (size_t i = 0; i < a.stops.size(); ++i) {
    const auto &x = a.stops[i], &y = b.stops[i];
    if (x.attempt_id != y.attempt_id || x.kind != y.kind || x.reason != y.reason) return false;
  }
  for (size_t i = 0; i < a.node_requests.size(); ++i) {
    const auto &x = a.node_requests[i], &y = b.node_requests[i];
    if (x.pool_id != y.pool_id || x.gpus != y.gpus || x.reason != y.reason) return false;
  }
  for (size_t i = 0; i < a.node_releases.size(); ++i) {
    if (a.node_releases[i].node_id != b.node_releases[i].node_id ||
        a.node_releases[i].reason != b.node_releases[i].reason)
      return false;
  }
  return same_waits(a.waits, b.waits) && same_waits(a.holds, b.holds);
}

std::vector<model::Assignment> AssignmentsOf(const model::Plan& plan, model::JobId job) {
  std::vector<model::Assignment> out;
  for (const auto& a : plan.assignments)
    if (a.job_id == job) out.push_back(a);
  return out;
}

const model::Wait* WaitOf(const model::Plan& plan, model::JobId job) {
  for (const auto& w : plan.waits)
    if (w.job_id == job) return &w;
  return nullptr;
}

}  // namespace frugal::policy::testing
