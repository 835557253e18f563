#include "scheduler/service/advisor.h"

#include "scheduler/policy/placement/cost_policy.h"

namespace frugal::service {

StatusOr<Quotes> Advisor::QuoteAll(const std::vector<model::JobSpec>& specs,
                                   const store::PoolReading& reading) const {
  Quotes out;
  out.now = reading.now;
  out.quotes.reserve(specs.size());
  for (const auto& spec : specs) {
    model::PendingJob job = policy::PendingFromSpec(spec, reading.now);
    ASSIGN_OR_RETURN(job.priority_rank, model::PriorityRank(spec.priority));
    out.quotes.push_back(policy::QuoteJob(job, reading.pools, reading.now, config_, book_));
  }
  return out;
}

StatusOr<Why> Advisor::Explain(model::JobId job) const {
  store::PendingWindow window = window_;
  window.focus = job;
  ASSIGN_OR_RETURN(auto snapshot, store_.LoadSnapshot(window));
  Why why;
  const model::PendingJob* pending = nullptr;
  for (const auto& p : snapshot.pending)
    if (p.id == job) pending = &p;
  if (!pending) return why;  // not pending (any more): nothing waits
  const int rank = pending->priority_rank;
  if (book_) {
    auto q = policy::QuoteJob(*pending, snapshot.pools, snapshot.now, config_, book_);
    why.spot = std::move(q.learned);
    if (q.on_demand_pool) {
      why.on_demand_cost = q.on_demand_cost;
      for (const auto& pool : snapshot.pools)
        if (pool.id == *q.on_demand_pool) why.on_demand_pool = pool.name;
    }
  }
  if (rank < static_cast<int>(config_.priority_classes.size()))
    why.priority_class = config_.priority_classes[rank];
  why.factors = policy::PriorityOf(snapshot, job, config_);
  if (why.factors) why.factors_text = policy::ExplainPriority(*why.factors, config_.weights);
  auto ahead = store_.PendingAhead(job);
  if (!ahead.ok()) {
    // Placed or cancelled since the snapshot: it no longer waits behind anything.
    if (ahead.status().code() == StatusCode::kNotFound) return Why{};
    return ahead.status();
  }
  why.higher_pending = ahead->higher_pending;
  why.same_class_pending = ahead->same_class_pending;
  return why;
}

}  // namespace frugal::service
