// The cost model of placement/cost: what a job is expected to cost and how long it is
// expected to take on a pool, and the deadline arithmetic built on that. Pure functions of
// plain values; Decide, Quote and `frugal why` all use these, so their numbers agree.
//
// Units: time in hours (double), money in micro-dollars (Micros, rounded from the double
// expectation only when an amount is produced).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy_config.h"

namespace frugal::policy {

double Hours(Seconds s);
double HoursBetween(Timestamp from, Timestamp to);  // negative when `to` is earlier

// What is left of a job, in reference hours (a speed-1.0 GPU).
struct Work {
  int gpus = 1;   // in all
  int nodes = 1;  // > 1: a multi-node gang on exactly this many nodes, gpus / nodes each
  double ref_hours = 0;  // remaining run time on a speed-1.0 GPU
  model::Tolerance tolerance = model::Tolerance::kRestartable;
  double checkpoint_hours = 0;  // between checkpoints; 0 unless checkpointed
  double restore_hours = 0;     // to resume from a checkpoint
  bool resumes = false;         // progress > 0: the run starts with a restore
  bool estimated = true;        // false: ref_hours comes from PolicyConfig::default_estimate
};

Work WorkOf(const model::PendingJob& job, const PolicyConfig& config);
// A running job's work left from its latest checkpoint (what a move would have to redo).
Work WorkOf(const model::RunningAttempt& attempt, const PolicyConfig& config);

// The expectation for one job on one pool.
struct Estimate {
  double run_hours = 0;      // wall time with no reclaim (plus one restore when resuming)
  double rework_hours = 0;   // expected extra wall time from reclaims (spot only)
  double wall_hours = 0;     // run + rework
  double preemptions = 0;    // expected reclaims during the run
  double loss_hours = 0;     // worst single reclaim: work since a checkpoint + restore
  double startup_hours = 0;  // waiting for a new node, when the option needs one
  Micros cost = 0;           // price x GPUs x wall: what the ledger is expected to charge
};

// Number of nodes a gang of `gpus` needs when nodes hold `node_gpus` (<= 0: one node).
int NodesSpanned(int gpus, int node_gpus);

// Spot adds rework = reclaim rate x run x (loss per reclaim), the loss being half a
// checkpoint interval plus the restore (checkpointed) or half the run (restartable). The rate
// is per node-hour and a gang's nodes are reclaimed together: `nodes` does not multiply it.
Estimate EstimateOn(const Work& work, const model::Pool& pool, int nodes, bool new_node);

// What placement minimises: expected cost per GPU per reference hour of work, in micros.
// Independent of the job's length for most jobs, so identical jobs of different lengths
// share one row of the min-cost flow. Reserved pools are weighted down (already paid).
double DecisionRate(const Work& work, const model::Pool& pool, const Estimate& estimate,
                    const PolicyConfig& config);

// True if the pool's GPU type and memory satisfy the job's request.
bool PoolFits(const std::vector<std::string>& gpu_types, std::optional<int> min_gpu_mem_gb,
              const model::Pool& pool);
// Spot is never safe for a deadline and never allowed for tolerance none.
bool IsSafe(model::CapacityKind kind);
bool MayRunOn(model::Tolerance tolerance, model::CapacityKind kind);

// Time to finish on a safe pool if committed now: start-up (none for reserved) + run.
double SafeHours(const Work& work, const model::Pool& pool);

// The deadline seen from `now`, against the fastest allowed safe pool.
struct DeadlineView {
  bool has_deadline = false;
  double left_hours = 0;    // until the deadline
  double safe_hours = 0;    // SafeHours on the fastest allowed safe pool (huge: none)
  double margin_hours = 0;  // kept in hand: max(deadline_margin, 2 x restore (rules only), fraction x safe)
  double slack_hours = 0;   // left - safe - margin (may be negative); huge without deadline
  bool Feasible() const { return !has_deadline || slack_hours >= 0; }
};
constexpr double kNoLimit = 1e18;

// Whose margin the view keeps. The rules keep two changeovers beyond the configured margin
// (the Safety Net of Can't Be Late): they do not count restores one by one. The learned
// controller's tables charge every changeover and every rollback to a checkpoint, so it
// keeps the configured margin only (the delay between a reclaim and the cycle that sees it).
enum class DeadlineGuard { kRules, kController };

DeadlineView ViewDeadline(std::optional<Timestamp> deadline, Timestamp now, double safe_hours,
                          const PolicyConfig& config, DeadlineGuard guard = DeadlineGuard::kRules);

// Slack a spot run puts at risk before the policy can react: its time beyond the safe run
// (a slower pool, a start-up) plus one worst reclaim, after which the job must still finish
// on safe capacity. The guard for running jobs re-checks it every cycle.
double SpotRiskHours(const Estimate& spot, const DeadlineView& view);
// Slack to keep in hand rather than spend waiting for spot: the risk plus what the
// remaining run's expected reclaims take from the slack (each: its rework, and one more
// restore to come back to spot from on-demand). Below it, waiting would leave the run no
// room to absorb its reclaims on spot.
double SpotReserveHours(const Estimate& spot, const DeadlineView& view, const Work& work);
// Spot is acceptable while the slack covers that risk (always, without a deadline).
bool SpotCovered(const Estimate& spot, const DeadlineView& view);
// A safe pool meets the deadline if its start-up plus run fits before deadline - margin.
bool SafeMeets(const Estimate& safe, const DeadlineView& view);

}  // namespace frugal::policy
