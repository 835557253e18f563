// Knobs of placement/cost, with the defaults MakePolicy(name) uses. Plain values: the
// engine may fill them from the scheduler config; the policy never reads anything else.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <vector>

#include "common/clock.h"
#include "scheduler/model/job.h"

namespace frugal::policy {

using namespace std::chrono_literals;

// Weights of the within-class priority factors (each factor is in [0, 1]; the score is
// their weighted mean, so only the ratios matter).
struct FactorWeights {
  double age = 1.0;         // time waited, saturating at PolicyConfig::age_saturation
  double fair_share = 1.0;  // teams that used less than their share go first
  double urgency = 2.0;     // little slack before the deadline
  double size = 0.5;        // bigger gangs go first, so they are not starved by small jobs
};

struct PolicyConfig {
  // Class names by rank (0 = highest); PendingJob::priority_rank indexes this list.
  std::vector<std::string> priority_classes = model::DefaultPriorityClasses();
  // A running job is not preempted by priority before it has run this long.
  Seconds min_run_time = 10min;
  FactorWeights weights;
  Seconds fair_share_half_life = 7 * 24h;  // usage this old counts half
  Seconds age_saturation = 24h;            // the age factor reaches 1 after this wait
  Seconds urgency_horizon = 24h;           // urgency starts rising when slack drops below this
  // Time to restore a job from its checkpoint (paid again after every preemption).
  Seconds restore_time = 5min;
  Seconds default_estimate = 1h;             // for jobs submitted without --estimate
  Seconds default_checkpoint_interval = 1h;  // for checkpointed jobs without an interval
  // Deadline guard: keep max(this, 2 x restore_time, fraction x safe run time) in hand. The
  // fraction is 0 by default: the risk of spot is counted per reclaim (checkpoint interval
  // and restore), so a margin that grows with the job's length only wastes spot on long jobs.
  Seconds deadline_margin = 10min;
  double deadline_margin_fraction = 0.0;
  // The wait option: with this much slack beyond the risk, waiting for cheaper capacity
  // costs no more than that capacity; the cost of waiting rises to "pay now" as slack runs out.
  Seconds wait_horizon = 6h;
  // Jobs without a deadline wait for cheaper capacity at most this long after submission.
  Seconds max_wait_without_deadline = 1h;
  // Assumed time until an overdue running job (past its estimate) ends.
  Seconds overdue_eta = 10min;
  int max_preemptions_per_cycle = 16;  // stops for priority per cycle: bounds churn
  // Multi-node gangs (decision 0032): a job with `nodes` > 1 is placed on that many nodes
  // of one pool at once; false leaves such jobs waiting.
  bool multi_node_gangs = true;
  // A single-node job larger than any node of a pool may be spread unevenly over its nodes.
  // Off, as the scheduler runs: the job did not ask for nodes, and its program would not
  // know its rank. The simulator's trace jobs (bench/sim/single_runs.cc) turn it on: their
  // jobs are GPU counts from cluster traces, with no node shape.
  bool spread_large_jobs = false;
  // Reserved capacity is already paid for: its marginal cost is its price times this
  // (not 0, so that among reserved pools the cheaper-per-work one still wins).
  double reserved_cost_weight = 0.001;
  // The learned spot controller (issue 14, decision 0023): deadline jobs choose between
  // spot, on-demand and waiting by the DP over each spot pool's learned availability model,
  // where the pool has one. Tables are solved in the background (SpotBook::SolvePending);
  // `solve_spot_tables_inline` solves them inside Decide instead (the simulator: every
  // decision has its table, at 1-3 s per new table).
  bool learned_spot_control = true;
  bool solve_spot_tables_inline = false;
  // The tables' cache (SpotBook): how many fitted models per pool keep their tables (the
  // scheduler decides with one at a time, so a refit replaces them), and the bytes of
  // tables kept per pool. The simulator, whose runs learned from different pasts, keeps
  // more of both; neither changes a decision, only how often a table is solved again.
  int spot_models_per_pool = 1;
  size_t spot_table_bytes_per_pool = 64u << 20;
};

}  // namespace frugal::policy
