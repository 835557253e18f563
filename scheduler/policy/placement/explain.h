// The human-readable side of placement/cost: every reason it writes, with the numbers
// behind the decision. Money as dollars to the cent, durations rounded coarsely (minutes
// below 10h, hours below 10 days) so a waiting job's reason does not change every cycle.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/money.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/placement/free_room.h"
#include "scheduler/policy/placement/class_placement.h"
#include "scheduler/policy/placement/ready_jobs.h"
#include "scheduler/policy/placement/preemption.h"
#include "scheduler/policy/placement/priority.h"

namespace frugal::policy {

std::string Dollars(Micros m);                   // "$24.00"
std::string RoughHours(double hours);            // "45m", "2h5m", "31h", "12d"
std::string KindName(model::CapacityKind kind);  // "reserved", "on-demand", "spot"

// Reasons for the jobs of one Decide.
class Explainer {
 public:
  Explainer(const model::Snapshot& snapshot, const FreeRoom& capacity, const ReadyJobs& options,
            const PolicyConfig& config);

  std::string Placed(int j, const JobResult& r) const;
  std::string NewNode(int j, const JobResult& r) const;
  std::string WaitCheaper(int j, const JobResult& r) const;
  std::string NoCapacity(int j) const;
  std::string NoOption(int j) const;
  std::string Stopping(int j, const Preemptor::Room& room) const;
  std::string Preempting(int j, const Preemptor::Room& room) const;
  // "job 11 can preempt job 10 at 19:38 UTC, when its 10-minute protection ends".
  std::string PreemptLater(int j, const Preemptor::Later& later) const;

 private:
  std::string PoolLabel(int option) const;  // "spot a100-spot"
  // Marginal cost: reserved capacity is already paid for.
  Micros Marginal(int option, const Estimate& e) const;
  // The cheapest allowed on-demand option, for comparison (-1: none).
  int OnDemandOption(int j) const;
  // Why cheaper capacity was not used, e.g. "slack 1h does not cover the spot risk of 2h".
  std::string WhyNotCheaper(int j, int chosen) const;
  std::string DeadlineNote(int j, int option, const Estimate& e) const;

  const model::Snapshot& snapshot_;
  const FreeRoom& capacity_;
  const ReadyJobs& options_;
  const PolicyConfig& config_;
  mutable std::map<std::vector<int>, std::string> pool_lists_;  // NoCapacity, by entries
};

// The stop reason of a priority-preemption victim.
std::string VictimReason(const model::PendingJob& preemptor, int gpus, const model::Node& node,
                         const VictimCost& cost, const PolicyConfig& config);

}  // namespace frugal::policy

namespace frugal::policy {

// The stop reason of a checkpointed spot job moved to safe capacity before its deadline.
std::string MigrationReason(const model::Pool& spot, double slack_hours, double loss_hours,
                            const model::Pool& safe);
// The stop reason of a spot job the learned controller moves to safe capacity (issue 14).
std::string LearnedMoveReason(const model::Pool& spot, const SpotDecision& decision,
                              const model::Pool& safe);
// The stop reason of an on-demand job moved to spot that came back with room.
std::string ReturnReason(const model::Pool& here, const model::Pool& spot,
                         const DeadlineView& view, const Estimate& spot_estimate, Micros saving);
// A node request for the jobs that are cheapest on capacity the pool can add.
std::string RequestReason(const std::vector<model::JobId>& jobs, int gpus, const model::Pool& pool);
std::string ReleaseReason(double idle_hours, const model::Pool& pool);

}  // namespace frugal::policy
