// placement/cost: places each job where its expected bill is smallest while its priority,
// deadline and interruption tolerance still hold (issue 4, decision 0005). One Decide:
//   1. dependencies: cancel or wait exactly as placement/fifo does;
//   2. deadline guard for running jobs: a checkpointed job on spot whose slack no longer
//      covers a reclaim is stopped to move to safe capacity (StopKind::kMigrateOffSpot);
//   3. per priority class, highest first: min-cost flow placement (class_placement.h),
//      then priority preemption for what found no room (preemption.h);
//   4. node requests for elastic pools the flow chose, node releases for idle nodes.
// Pure and deterministic like every policy; thread-safe (const, no shared state).
#pragma once

#include <optional>

#include "scheduler/policy/policy.h"
#include "scheduler/policy/policy_config.h"
#include "scheduler/policy/placement/priority.h"
#include "scheduler/policy/placement/spot_book.h"

namespace frugal::policy {

class CostPolicy final : public Policy {
 public:
  explicit CostPolicy(PolicyConfig config = {})
      : config_(std::move(config)),
        book_(config_.learned_spot_control
                  ? std::make_shared<SpotBook>(config_.solve_spot_tables_inline,
                                               config_.spot_table_bytes_per_pool,
                                               config_.spot_models_per_pool)
                  : nullptr) {}
  std::string Name() const override { return "placement/cost"; }
  model::Plan Decide(const model::Snapshot& snapshot) const override;
  const PolicyConfig& config() const override { return config_; }
  // The learned controller's tables (null when learned_spot_control is off). The engine's
  // background thread solves what Decide queued: spot_book()->SolvePending().
  const std::shared_ptr<SpotBook>& spot_book() const { return book_; }

 private:
  PolicyConfig config_;
  std::shared_ptr<SpotBook> book_;
};

// For `frugal why`: the priority factors of pending job `job` in this snapshot (empty if it
// is not a ready pending job). Show with ExplainPriority(factors, config.weights).
std::optional<PriorityFactors> PriorityOf(const model::Snapshot& snapshot, model::JobId job,
                                          const PolicyConfig& config = {});

}  // namespace frugal::policy
