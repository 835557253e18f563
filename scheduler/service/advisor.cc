#include "scheduler/service/advisor.h"

#include "scheduler/policy/placement/cost_policy.h"

namespace frugal::service {

StatusOr<policy::Quote> Advisor::Quote(const model::JobSpec& spec, Timestamp now) const {
  ASSIGN_OR_RETURN(auto pools, store_.ListPools());
  model::PendingJob job = policy::PendingFromSpec(spec, now);
  ASSIGN_OR_RETURN(job.priority_rank, model::PriorityRank(spec.priority));
  return policy::QuoteJob(job, pools, now, config_, book_);
}

StatusOr<std::vector<policy::Quote>> Advisor::QuoteAll(const std::vector<model::JobSpec>& specs,
                                                       Timestamp now) const {
  ASSIGN_OR_RETURN(auto pools, store_.ListPools());
  std::vector<policy::Quote> out;
  out.reserve(specs.size());
  for (const auto& spec : specs) {
    model::PendingJob job = policy::PendingFromSpec(spec, now);
    ASSIGN_OR_RETURN(job.priority_rank, model::PriorityRank(spec.priority));
    out.push_back(policy::QuoteJob(job, pools, now, config_, book_));
  }
  return out;
}

StatusOr<Why> Advisor::Explain(model::JobId job, int max_pending) const {
  ASSIGN_OR_RETURN(auto snapshot, store_.LoadSnapshot({max_pending, max_pending}));
  Why why;
  int rank = -1;
  for (const auto& p : snapshot.pending) {
    if (p.id != job) continue;
    rank = p.priority_rank;
    if (book_) {
      auto q = policy::QuoteJob(p, snapshot.pools, snapshot.now, config_, book_);
      why.spot = std::move(q.learned);
      if (q.on_demand_pool) {
        why.on_demand_cost = q.on_demand_cost;
        for (const auto& pool : snapshot.pools)
          if (pool.id == *q.on_demand_pool) why.on_demand_pool = pool.name;
      }
    }
  }
  if (rank < 0) return why;
  if (rank < static_cast<int>(config_.priority_classes.size()))
    why.priority_class = config_.priority_classes[rank];
  why.factors = policy::PriorityOf(snapshot, job, config_);
  if (why.factors) why.factors_text = policy::ExplainPriority(*why.factors, config_.weights);
  for (const auto& p : snapshot.pending) {
    if (p.priority_rank < rank) ++why.higher_pending;
    if (p.priority_rank == rank && p.id != job) ++why.same_class_pending;
  }
  return why;
}

}  // namespace frugal::service
