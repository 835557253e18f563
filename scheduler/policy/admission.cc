#include "scheduler/policy/admission.h"

#include <map>
#include <set>
#include <vector>

namespace frugal::policy {

void EnforceAdmission(const model::Snapshot& s, model::Plan& plan, const AdmissionRules& rules) {
  std::map<model::JobId, const model::PendingJob*> jobs;
  for (const auto& j : s.pending) jobs[j.id] = &j;
  std::map<model::PoolId, const model::Pool*> pools;
  for (const auto& p : s.pools) pools.try_emplace(p.id, &p);
  std::map<model::NodeId, const model::Pool*> pool_of_node;
  for (const auto& n : s.nodes) {
    auto p = pools.find(n.pool_id);
    pool_of_node[n.id] = p == pools.end() ? nullptr : p->second;
  }

  // A gang's parts share a job id: its ask is the sum of the parts', admitted or refused
  // as one.
  std::map<model::JobId, Amount> job_amount;
  for (const auto& a : plan.assignments) job_amount[a.job_id] += rules.part_amount(a);
  std::set<model::JobId> refused, admitted;
  std::vector<model::Assignment> kept;
  for (const auto& a : plan.assignments) {
    auto j = jobs.find(a.job_id);
    auto p = pool_of_node.find(a.node_id);
    if (j == jobs.end() || p == pool_of_node.end() || !p->second) {
      kept.push_back(a);
      continue;
    }
    if (!admitted.count(a.job_id) && !refused.count(a.job_id)) {
      std::string why = rules.holding(*j->second, *p->second, job_amount[a.job_id]);
      if (why.empty()) {
        rules.take(*j->second, *p->second, job_amount[a.job_id]);
        admitted.insert(a.job_id);
      } else {
        refused.insert(a.job_id);
        plan.waits.push_back({a.job_id, "waiting: " + why});
      }
    }
    if (admitted.count(a.job_id)) kept.push_back(a);
  }
  plan.assignments = std::move(kept);

  // Jobs the policy left waiting because this limit closed every pool they could use say
  // so, citing the pool where they ask least (for a budget: the cheapest).
  for (auto& w : plan.waits) {
    if (refused.count(w.job_id)) continue;
    auto j = jobs.find(w.job_id);
    if (j == jobs.end()) continue;
    const model::PendingJob& job = *j->second;
    std::string holding;
    Amount least = 0;
    bool open = false;
    for (const auto& p : s.pools) {
      const std::optional<Amount> ask = rules.ask_on(job, p);
      if (!ask) continue;
      std::string h = rules.holding(job, p, *ask);
      if (h.empty()) {
        open = true;
        break;
      }
      if (holding.empty() || *ask < least) holding = std::move(h), least = *ask;
    }
    if (!open && !holding.empty()) w.reason = "waiting: " + holding;
  }
}

}  // namespace frugal::policy
