// What the learned spot controller expects of a job on each spot pool with a model (issue
// 14): the figures `frugal why` and `frugal submit --dry-run` print, e.g. "spot a100-spot:
// expected $41 ± 9, 1.3 reclaims, deadline risk 0%; a100-spot up for 2h 15m, 1.2% chance
// of a reclaim per 3 minutes; the model says spot". From a Monte Carlo of the pool's chain
// run by the controller's own table, on-demand fallback included. Pure but for the book,
// which it asks for tables (queued, not solved, when missing: `ready` is then false).
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy_config.h"
#include "scheduler/policy/placement/spot_book.h"

namespace frugal::policy {

struct SpotOutlook {
  model::PoolId pool_id = 0;
  std::string pool;
  bool ready = false;  // the table is solved; the figures below are set only then
  SpotAction action = SpotAction::kOnDemand;
  Micros expected_cost = 0;  // the whole job, every GPU
  Micros cost_sd = 0;
  double reclaims = 0;
  double deadline_risk = 0;  // share of simulated paths that miss (0 by construction, but shown)
  bool up = true;
  std::int64_t spell_seconds = 0;
  double hazard = 0;  // chance the spell ends in the next tick
  std::string text;
};

// One outlook per spot pool with a learned model that `job` may use, for a job with a
// deadline and checkpoints (or none: the controller does not decide the others).
std::vector<SpotOutlook> SpotOutlooks(const model::PendingJob& job,
                                      const std::vector<model::Pool>& pools, Timestamp now,
                                      const PolicyConfig& config, const SpotBook& book);

}  // namespace frugal::policy
