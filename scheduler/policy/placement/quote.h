// What a job would cost and when it would finish on each pool, before it is submitted:
// `frugal submit --dry-run` prints it, and submit refuses (422) a deadline that even the
// fastest allowed reserved or on-demand pool cannot meet. Pure; same cost model as Decide.
// It does not know current free capacity: a recommendation is "capacity permitting". It
// does know node sizes (model::Pool::largest_node_gpus): a pool names only jobs its nodes hold.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy_config.h"
#include "scheduler/policy/placement/spot_outlook.h"

namespace frugal::policy {

struct PoolQuote {
  model::PoolId pool_id = 0;
  std::string pool;
  model::CapacityKind kind = model::CapacityKind::kOnDemand;
  std::string gpu_type;
  bool allowed = false;
  std::string why_not;       // when not allowed: type, tolerance, size or deadline
  Micros expected_cost = 0;  // price x GPUs x expected wall time (reserved: already paid)
  Micros low_cost = 0;       // no reclaim (and half the default estimate without one)
  Micros high_cost = 0;      // expected reclaims + 2 sigma, each losing the most it can
  Seconds expected_wall{0};  // start-up + run + expected rework
  Timestamp expected_finish{};
  double expected_preemptions = 0;
};

struct Quote {
  std::vector<PoolQuote> pools;                 // every pool, by id
  std::optional<model::PoolId> recommended;     // what placement/cost prefers, capacity permitting
  // The entry of `pools` for `recommended`; null when there is none.
  const PoolQuote* RecommendedPool() const {
    for (const auto& p : pools)
      if (recommended && p.pool_id == *recommended) return &p;
    return nullptr;
  }
  std::string recommendation;                   // why, with numbers
  std::optional<model::PoolId> on_demand_pool;  // the cheapest allowed on-demand pool
  Micros on_demand_cost = 0;
  std::optional<model::PoolId> earliest_pool;  // fastest allowed reserved or on-demand pool
  std::optional<Timestamp> earliest_finish;
  bool deadline_feasible = true;
  std::string refusal;  // when not: the message for the 422, with the earliest finish
  // Until gangs span nodes: set when every pool the job may use has nodes of a known size
  // and none holds the job; the message for the 422 at submit.
  std::string unplaceable;
  // The learned spot controller's view per spot pool with a model (issue 14); empty
  // without a book, a deadline or a spot pool with a model.
  std::vector<SpotOutlook> learned;
};

Quote QuoteJob(const model::PendingJob& job, const std::vector<model::Pool>& pools, Timestamp now,
               const PolicyConfig& config = {}, const SpotBook* book = nullptr);

// The policy's view of a job about to be submitted (priority rank left at its default).
model::PendingJob PendingFromSpec(const model::JobSpec& spec, Timestamp created_at);

}  // namespace frugal::policy
