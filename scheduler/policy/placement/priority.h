// Priority within and across classes for placement/cost. Classes are strict (rank 0
// first); within a class jobs are ordered by a score, the weighted mean of named factors
// in [0, 1] (Slurm's multifactor plugin, shown per job like `sprio`). Also which running
// jobs priority may preempt, and what preempting one costs. All pure functions.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "common/clock.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/placement/cost_model.h"
#include "scheduler/policy/policy_config.h"

namespace frugal::policy {

struct PriorityFactors {
  double age = 0;         // time waited / age_saturation, capped at 1
  double fair_share = 1;  // 2^-(team usage fraction / team share fraction)
  double urgency = 0;     // 1 - slack / urgency_horizon, in [0, 1]; 0 without a deadline
  double size = 0;        // log2(1 + GPUs) / log2(1 + largest pending GPUs)
  double score = 0;       // weighted mean of the above, in [0, 1]
};

double AgeFactor(double waited_hours, Seconds saturation);
// Usage `elapsed_hours` old, halved every `half_life`.
double DecayedUsage(double gpu_hours, double elapsed_hours, Seconds half_life);
double FairShareFactor(double usage_fraction, double share_fraction);
double UrgencyFactor(const DeadlineView& view, Seconds horizon);
double SizeFactor(int gpus, int largest_gpus);
double WeightedScore(const PriorityFactors& f, const FactorWeights& w);
// "score 0.62 = (age 0.50x1 + fair_share 0.80x1 + urgency 0.00x2 + size 0.33x0.5) / 4.5"
std::string ExplainPriority(const PriorityFactors& f, const FactorWeights& w);

// Fair-share factors of every team in one snapshot: usage decayed to `now`, shares
// normalised over the teams that have usage, a share or a pending job.
class FairShare {
 public:
  FairShare(const model::Snapshot& snapshot, const PolicyConfig& config);
  double Factor(model::TeamId team) const;  // 1.0 for a team nobody has heard of

 private:
  std::map<model::TeamId, double> factor_;
};

// All factors of one pending job. `largest_gpus`: the biggest request pending this cycle.
PriorityFactors FactorsFor(const model::PendingJob& job, const DeadlineView& deadline,
                           const FairShare& fair_share, int largest_gpus, Timestamp now,
                           const PolicyConfig& config);

// When the attempt's protection from priority preemption ends: its start plus its class's
// min_run_time (RunningAttempt::min_run_time), or config.min_run_time when the class sets none.
Timestamp ProtectedUntil(const model::RunningAttempt& a, const PolicyConfig& config);

// Why priority may not preempt this attempt (empty: it may). Never: tolerance none, an
// outstanding stop, less than its min_run_time run, or preempted by priority before and no
// checkpoint since (no preemption storms).
std::optional<std::string> WhyNotPreemptable(const model::RunningAttempt& a, Timestamp now,
                                             const PolicyConfig& config);

// What preempting an attempt throws away, in GPU-hours: the work since its latest
// checkpoint (since its start if it has none) and the restore it then has to pay.
struct VictimCost {
  double lost_gpu_hours = 0;
  double restart_gpu_hours = 0;
  double Total() const { return lost_gpu_hours + restart_gpu_hours; }
};
VictimCost CostToPreempt(const model::RunningAttempt& a, Timestamp now, const PolicyConfig& config);

// Name of a class rank ("normal"), or "rank N" past the configured list.
std::string ClassName(int rank, const PolicyConfig& config);

}  // namespace frugal::policy
