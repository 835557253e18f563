#include "scheduler/policy/admission/admission.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

namespace frugal::policy {

namespace {

std::string JobList(const std::vector<model::JobId>& ids) {
  std::string out;
  for (auto id : ids) out += (out.empty() ? "" : ", ") + std::to_string(id);
  return out;
}

}  // namespace

bool Ready(const model::PendingJob& job) {
  return !job.failed_dependency && job.waiting_for.empty();
}

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

void HoldNodeRequests(const model::Snapshot& s, model::Plan& plan, const AdmissionRules& rules,
                      const std::string& held_by) {
  std::map<model::JobId, const model::PendingJob*> jobs;
  for (const auto& j : s.pending) jobs[j.id] = &j;
  std::map<model::PoolId, const model::Pool*> pools;
  for (const auto& p : s.pools) pools.try_emplace(p.id, &p);
  std::set<model::JobId> placed;
  for (const auto& a : plan.assignments) placed.insert(a.job_id);

  std::map<model::JobId, std::string> held;  // job -> why, for its wait reason
  std::vector<model::NodeRequest> kept;
  for (auto& r : plan.node_requests) {
    auto p = pools.find(r.pool_id);
    if (p == pools.end()) {
      kept.push_back(std::move(r));
      continue;
    }
    const model::Pool& pool = *p->second;
    if (r.job_ids.empty()) {
      // Nothing is taken from the book for it: it is not known for whom.
      bool wanted = false, any = false;
      for (const auto& j : s.pending) {
        if (!Ready(j) || placed.count(j.id)) continue;
        const std::optional<Amount> ask = rules.ask_on(j, pool);
        if (!ask) continue;
        any = true;
        if (rules.holding(j, pool, *ask).empty()) {
          wanted = true;
          break;
        }
      }
      if (wanted || !any) kept.push_back(std::move(r));
      continue;
    }
    std::vector<model::JobId> ids, dropped;
    int held_gpus = 0;
    for (model::JobId id : r.job_ids) {
      auto j = jobs.find(id);
      const std::optional<Amount> ask =
          j == jobs.end() || placed.count(id) ? std::nullopt : rules.ask_on(*j->second, pool);
      if (!ask) {
        ids.push_back(id);  // not this limit's to judge
        continue;
      }
      std::string why = rules.holding(*j->second, pool, *ask);
      if (why.empty()) {
        rules.take(*j->second, pool, *ask);
        ids.push_back(id);
      } else {
        held_gpus += j->second->gpus;
        dropped.push_back(id);
        held[id] = std::move(why);
      }
    }
    if (dropped.empty()) {
      kept.push_back(std::move(r));
      continue;
    }
    // GPUs already on their way were subtracted from the request for all its jobs: the
    // held jobs' share comes off what is still asked for.
    r.gpus = std::max(0, r.gpus - held_gpus);
    r.job_ids = std::move(ids);
    r.reason += "; " + std::to_string(held_gpus) + " GPU(s) fewer: job(s) " + JobList(dropped) +
                " held by " + held_by;
    if (r.gpus > 0) kept.push_back(std::move(r));
  }
  plan.node_requests = std::move(kept);
  for (auto& w : plan.waits) {
    auto h = held.find(w.job_id);
    if (h == held.end()) continue;
    w.reason = "waiting: " + h->second;
    held.erase(h);
  }
  for (auto& [id, why] : held) plan.waits.push_back({id, "waiting: " + why});
}

}  // namespace frugal::policy
