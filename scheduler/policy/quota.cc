#include "scheduler/policy/quota.h"

#include <algorithm>
#include <set>

#include "scheduler/policy/cost_model.h"

namespace frugal::policy {

namespace {

const char* KindWords(model::CapacityKind k) {
  switch (k) {
    case model::CapacityKind::kReserved: return "reserved";
    case model::CapacityKind::kOnDemand: return "on-demand";
    case model::CapacityKind::kSpot: return "spot";
  }
  return "";
}

const model::Pool* PoolOf(const model::Snapshot& s, model::PoolId id) {
  for (const auto& p : s.pools)
    if (p.id == id) return &p;
  return nullptr;
}

}  // namespace

QuotaBook::QuotaBook(const model::Snapshot& s) : snapshot_(s) {
  for (const auto& r : s.running) {
    const model::Pool* pool = PoolOf(s, r.pool_id);
    if (!pool) continue;
    by_kind_[{r.team_id, pool->kind}] += r.gpus;
    by_pool_[{r.team_id, pool->id}] += r.gpus;
  }
}

std::string QuotaBook::Holding(model::TeamId team, const model::Pool& pool, int gpus) const {
  auto q = snapshot_.quotas.find(team);
  if (q == snapshot_.quotas.end()) return "";
  auto in_use = [](const auto& m, const auto& key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  };
  if (auto k = q->second.by_kind.find(pool.kind); k != q->second.by_kind.end()) {
    const int used = in_use(by_kind_, std::pair{team, pool.kind});
    if (used + gpus > k->second)
      return "over team quota: " + std::to_string(used) + "/" + std::to_string(k->second) + " " +
             KindWords(pool.kind) + " GPUs in use";
  }
  if (auto p = q->second.by_pool.find(pool.id); p != q->second.by_pool.end()) {
    const int used = in_use(by_pool_, std::pair{team, pool.id});
    if (used + gpus > p->second)
      return "over team quota: " + std::to_string(used) + "/" + std::to_string(p->second) +
             " GPUs of pool " + pool.name + " in use";
  }
  return "";
}

bool QuotaBook::Allows(model::TeamId team, const model::Pool& pool, int gpus) const {
  return Holding(team, pool, gpus).empty();
}

void QuotaBook::Take(model::TeamId team, const model::Pool& pool, int gpus) {
  by_kind_[{team, pool.kind}] += gpus;
  by_pool_[{team, pool.id}] += gpus;
}

void EnforceQuotas(const model::Snapshot& s, model::Plan& plan) {
  if (s.quotas.empty()) return;
  QuotaBook book(s);
  std::map<model::JobId, const model::PendingJob*> jobs;
  for (const auto& j : s.pending) jobs[j.id] = &j;
  std::map<model::NodeId, const model::Pool*> pool_of_node;
  for (const auto& n : s.nodes) pool_of_node[n.id] = PoolOf(s, n.pool_id);

  // A gang's parts share a job id: admit or refuse them together.
  std::map<model::JobId, int> gang_gpus;
  for (const auto& a : plan.assignments) gang_gpus[a.job_id] += a.gpus;
  std::set<model::JobId> refused, admitted;
  std::vector<model::Assignment> kept;
  for (const auto& a : plan.assignments) {
    auto j = jobs.find(a.job_id);
    const model::Pool* pool = pool_of_node.count(a.node_id) ? pool_of_node[a.node_id] : nullptr;
    if (j == jobs.end() || !pool) {
      kept.push_back(a);
      continue;
    }
    if (!admitted.count(a.job_id) && !refused.count(a.job_id)) {
      std::string why = book.Holding(j->second->team_id, *pool, gang_gpus[a.job_id]);
      if (why.empty()) {
        book.Take(j->second->team_id, *pool, gang_gpus[a.job_id]);
        admitted.insert(a.job_id);
      } else {
        refused.insert(a.job_id);
        plan.waits.push_back({a.job_id, "waiting: " + why});
      }
    }
    if (admitted.count(a.job_id)) kept.push_back(a);
  }
  plan.assignments = std::move(kept);

  // Jobs the policy left waiting because no pool had room for the team say so.
  for (auto& w : plan.waits) {
    if (refused.count(w.job_id)) continue;
    auto j = jobs.find(w.job_id);
    if (j == jobs.end()) continue;
    const model::PendingJob& job = *j->second;
    std::string holding;
    bool any_fit = false;
    for (const auto& p : s.pools) {
      if (!PoolFits(job.gpu_types, job.min_gpu_mem_gb, p)) continue;
      if (job.tolerance == model::Tolerance::kNone && p.kind == model::CapacityKind::kSpot)
        continue;
      any_fit = true;
      std::string h = book.Holding(job.team_id, p, job.gpus);
      if (h.empty()) {
        holding.clear();
        break;
      }
      if (holding.empty()) holding = h;
    }
    if (any_fit && !holding.empty()) w.reason = "waiting: " + holding;
  }
}

}  // namespace frugal::policy
