#include "scheduler/policy/placement/fifo_policy.h"

#include <algorithm>
#include <map>

namespace frugal::policy {

bool NodeFits(const model::PendingJob& job, const model::Node& node) {
  if (!job.gpu_types.empty() &&
      std::find(job.gpu_types.begin(), job.gpu_types.end(), node.gpu_type) == job.gpu_types.end())
    return false;
  if (job.min_gpu_mem_gb && node.gpu_mem_gb < *job.min_gpu_mem_gb) return false;
  return true;
}

model::Plan FifoPolicy::Decide(const model::Snapshot& snap) const {
  model::Plan plan;
  std::map<model::NodeId, int> free;  // ordered by node id: ties broken by id
  for (const auto& n : snap.nodes) free[n.id] = n.gpus;
  for (const auto& r : snap.running) {
    auto it = free.find(r.node_id);
    if (it != free.end()) it->second -= r.gpus;
  }
  std::map<model::NodeId, const model::Node*> by_id;
  for (const auto& n : snap.nodes) by_id[n.id] = &n;
  // Hard limits every policy keeps: a pool's max_gpus (when set), no tolerance-none job on
  // spot, nothing new on a node under a reclaim notice.
  std::map<model::PoolId, const model::Pool*> pools;
  for (const auto& p : snap.pools) pools.emplace(p.id, &p);
  std::map<model::PoolId, int> pool_used;
  for (const auto& r : snap.running) {
    auto it = by_id.find(r.node_id);
    if (it != by_id.end()) pool_used[it->second->pool_id] += r.gpus;
  }

  std::vector<const model::PendingJob*> order;
  for (const auto& j : snap.pending) order.push_back(&j);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) {
    return a->priority_rank != b->priority_rank ? a->priority_rank < b->priority_rank
                                                : a->id < b->id;
  });

  for (const auto* job : order) {
    if (job->failed_dependency) {
      plan.holds.push_back({job->id, "held: dependency " +
                                           std::to_string(*job->failed_dependency) +
                                           " did not succeed"});
      continue;
    }
    if (!job->waiting_for.empty()) {
      std::string ids;
      for (auto id : job->waiting_for) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      plan.waits.push_back({job->id, "waiting: for dependencies " + ids + " to succeed"});
      continue;
    }
    if (job->nodes > 1) {
      plan.waits.push_back({job->id, "waiting: placement/fifo places single-node jobs only; "
                                     "run the scheduler with --policy placement/cost for "
                                     "multi-node gangs"});
      continue;
    }
    int fitting_nodes = 0;
    bool placed = false;
    for (auto& [node_id, gpus_free] : free) {
      const model::Node& node = *by_id[node_id];
      if (!NodeFits(*job, node) || node.gpus < job->gpus) continue;
      auto pool = pools.find(node.pool_id);
      const model::Pool* p = pool == pools.end() ? nullptr : pool->second;
      if (p && p->kind == model::CapacityKind::kSpot && job->tolerance == model::Tolerance::kNone)
        continue;
      ++fitting_nodes;
      if (gpus_free < job->gpus || node.under_notice) continue;
      if (p && p->max_gpus > 0 && pool_used[node.pool_id] + job->gpus > p->max_gpus) continue;
      gpus_free -= job->gpus;
      pool_used[node.pool_id] += job->gpus;
      plan.assignments.push_back({job->id, node_id, job->gpus,
                                  "placement/fifo: first node with " +
                                      std::to_string(job->gpus) + " free GPU(s): " + node.name});
      placed = true;
      break;
    }
    if (placed) continue;
    std::string reason;
    if (snap.nodes.empty()) {
      reason = "waiting: no live nodes are registered";
    } else if (fitting_nodes == 0) {
      reason = "waiting: no live node has " + std::to_string(job->gpus) +
               " GPU(s) of an allowed type";
    } else {
      reason = "waiting: all " + std::to_string(fitting_nodes) +
               " fitting node(s) are busy";
    }
    plan.waits.push_back({job->id, reason});
  }
  return plan;
}

}  // namespace frugal::policy
