// Runs the single-job experiments (issue 6, experiments 1-3): every policy on the same job
// (submission step, C0, R0, d) over many random submission points, in parallel over
// submission points. Each run's record goes to the CSV; report.h aggregates them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/sim/market.h"
#include "scheduler/policy/policy.h"

namespace frugal::sim {

// One market the jobs of an experiment run on, e.g. one zone (experiment 1), a group of
// zones (2) or a zone for a gang (3). `per_zone` holds one single-zone market per zone of
// a multi-zone case, for the single-zone baselines of experiment 2.
struct Case {
  std::string name;
  Market market;
  std::vector<Market> per_zone;
  int start_stride = 1;  // submission points at multiples of this (a sub-stepped tick's start)
};

struct SingleJobSpec {
  std::string experiment;  // "exp1", ...: the CSV's first column
  std::vector<Case> cases;
  std::vector<double> fractions;  // C0 / R0
  std::vector<double> d_hours;    // changeover
  int starts = 300;               // random submission points per case
  std::uint64_t seed = 1;
  double work_hours = 48;  // C0
  double checkpoint_hours = 0.25;
  // What a reclaim costs (market.h): the pools' notice and the job's checkpoints follow it
  // (kLossFree overrides checkpoint_hours with a checkpoint every step).
  LossSetting loss = LossSetting::kNoNotice;
  bool multi_zone = false;  // adds SkyPilot failover and single-zone Uniform Progress
  int frugal_cycle_steps = 1;
  double frugal_prior_per_node_hour = 0.1;
  // > 0: adds the model-optimal reference (model_dp.h) on zone 0, its spot statistics fitted
  // on the whole series with this many age bins per side. Single-zone cases only.
  int reference_bins = 0;
  // Every policy's submission points in the second half of each series, and Frugal learns
  // from the first half only (FrugalOptions::learn_until_step = the split): every figure
  // learned from the past (issue 14). Adds the held-out reference (fitted on the first
  // half) beside the in-sample one.
  bool second_half = false;
  // Set: the held-out reference runs in this loss setting only (its tables are the slowest
  // part of experiment 1; issue 14's runtime bar).
  std::optional<LossSetting> held_out_only;
  // Only the baselines of Can't Be Late (greedy, both Uniform Progress readings), on-demand
  // and the optimum: the paper protocol (paper_protocol.h) has no Frugal.
  bool baselines_only = false;
};

struct RunRecord {
  int case_index = 0;
  double fraction = 0, d_hours = 0;
  int start = 0;  // market step of submission
  std::string policy;
  double cost = 0;  // USD
  double norm = 0;  // cost / on-demand-only cost
  bool missed = false;
  double finish_hours = 0;
  int reclaims = 0;
  double lost_hours = 0;
  double spot_hours = 0, od_hours = 0;  // billed hours per kind (changeovers included)
  int launches = 0;
};

// Policy names in the records.
inline constexpr const char* kOnDemandName = "on-demand";
inline constexpr const char* kOptimumName = "optimum";
inline constexpr const char* kUpZoneMeanName = "uniform-progress-1zone";  // mean over zones
inline constexpr const char* kReferenceName = "model-optimal";            // in-sample
inline constexpr const char* kReferenceHeldOutName = "model-optimal-heldout";

// Every run of the spec, ordered by (case, start, fraction, d, policy) whatever the thread
// schedule, so results are the same for a seed. `threads` >= 1. Frugal is the policy
// registered as "placement/cost" with its defaults, except restore_time = d (the
// changeover is what a resume costs) and, for gangs, multi-node gangs allowed.
std::vector<RunRecord> RunSingleJobs(const SingleJobSpec& spec, int threads);
// The same spec in each of `losses` (spec.loss ignored), one vector of records per setting,
// each as RunSingleJobs would give it. The settings share the references' tables where they
// need the same one, and each case's tables live once for all of them.
std::vector<std::vector<RunRecord>> RunSingleJobsIn(const SingleJobSpec& spec,
                                                    const std::vector<LossSetting>& losses,
                                                    int threads);

// The Frugal policy of a cell: placement/cost by name, restore_time = the changeover.
std::unique_ptr<policy::Policy> FrugalPolicyFor(double d_hours);

// Submission points of a case: `n` distinct steps drawn uniformly (seeded by the spec's
// seed and the case's name) from those from `first` on that leave `window` steps of market
// after them.
std::vector<int> StartPoints(const Case& c, int n, int window, std::uint64_t seed, int first = 0);

// The job of a cell on the grid: C0 and R0 rounded down to whole steps, d rounded to the
// nearest step (at least one).
JobShape ShapeFor(const Market& m, double work_hours, double fraction, double d_hours,
                  double checkpoint_hours, int start);

// Runs `fn(i)` for i in [0, n) on `threads` threads (an atomic counter hands out indexes).
void ParallelFor(int n, int threads, const std::function<void(int)>& fn);

}  // namespace frugal::sim
