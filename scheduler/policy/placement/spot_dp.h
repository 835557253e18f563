// The learned spot controller (issue 14, decision 0023): for one deadline job on one spot
// pool, the choice of spot, on-demand or waiting that is optimal in expectation when the
// pool's availability follows its learned semi-Markov chain (model/availability.h).
//
// A dynamic program over (ticks to the deadline, ticks of work left, where the job is,
// changeover ticks left, unsaved ticks on spot, chain state) under the simulator's exact
// rules (bench/sim/single_job_sim.h): every launch pays `changeover` ticks at the new instance's
// price with no progress; a reclaim rolls progress back to the latest checkpoint; a
// voluntary stop checkpoints first. Prices are per tick with on-demand = 1. A missed
// deadline is priced as infinite: on-demand is certain, so the policy never takes a chance
// of a miss that on-demand could avoid.
//
// Compact by construction: the value table is solved layer by layer in ticks-left (two
// layers in memory), and only the policy is kept, as runs along ticks-left per (work, mode,
// state): the optimal action is a step function of the slack (wait or spot with slack to
// spare, on-demand when it runs out), so each cell holds one to a few runs. A 48-hour job at
// 3-minute ticks keeps a few MB where the full table took a few hundred.
//
// Thread-safety: immutable after construction; every const method is safe concurrently.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "scheduler/model/availability.h"

namespace frugal::policy {

struct SpotDpShape {
  int max_time = 0;          // ticks: the longest time to the deadline solved for
  int max_work = 0;          // ticks of work: the largest job solved for
  int changeover = 1;        // ticks paid at each launch (restore, boot) before progress
  int checkpoint = 1;        // ticks between periodic checkpoints; 1: a reclaim loses nothing
  double spot_price = 0.3;   // per tick, on-demand = 1
  double od_price = 1.0;     // kept 1: costs are in on-demand ticks
};

enum class SpotAction : std::uint8_t { kWait = 0, kOnDemand = 1, kSpot = 2 };
const char* ToString(SpotAction a);

enum class JobWhere : std::uint8_t { kIdle, kOnDemand, kSpot };

// One job as the DP sees it at the start of a tick.
struct SpotJobState {
  int time_left = 0;        // ticks to the deadline
  int work_left = 0;        // ticks of work
  JobWhere where = JobWhere::kIdle;
  int changeover_left = 0;  // launch ticks still to pay where it runs
  int unsaved = 0;          // ticks of progress since its latest checkpoint (on spot)
  int chain_state = 0;      // AvailabilityModel::State(up, age) now
};

class SpotPolicy {
 public:
  // Solves the DP. `next` are the chain's transitions and `up` whether each state is up
  // (AvailabilityModel::Transitions and IsUp). Takes about 1-3 s of one core at 960 x 912.
  SpotPolicy(const std::vector<std::vector<model::AvailabilityModel::Next>>& next,
             const std::vector<std::uint8_t>& up, const SpotDpShape& shape);

  const SpotDpShape& shape() const { return shape_; }
  // True if the job is within what was solved (work, and the changeover and checkpoint
  // it was solved with are the caller's to match). Time beyond max_time is read as
  // max_time: fewer ticks than the job has, which only makes the policy more careful.
  bool Covers(const SpotJobState& s) const { return s.work_left <= shape_.max_work; }
  // The best action now. Spot is returned only in an up state.
  SpotAction Action(const SpotJobState& s) const;
  // Expected cost, in on-demand ticks, of the widest job (max_time, max_work) submitted idle
  // in `state` and run by this policy.
  double StartValue(int state) const { return start_values_[state]; }
  // Expected cost, in on-demand ticks, of a job idle now in `s` (its where is ignored) and
  // run by this policy from here: kept on a grid of kValueGrid ticks, read with the time
  // rounded down (an over-estimate) and the work interpolated between the two grid points
  // around it (where both are finite; else the larger work's). Comparable across pools of
  // one job: placement picks the spot pool to go to or wait for by it. Infinite when the
  // deadline cannot be met.
  double IdleValue(const SpotJobState& s) const;
  static constexpr int kValueGrid = 8;
  // Memory the policy holds, in bytes.
  size_t bytes() const;

 private:
  int Mode(const SpotJobState& s) const;
  SpotDpShape shape_;
  int M_ = 0, S_ = 0;
  // Runs along ticks-left, per cell (work, mode, state): cell c's runs are
  // [offsets_[c], offsets_[c + 1]), each starting at run_tau_ with action run_act_.
  std::vector<std::uint32_t> offsets_;
  std::vector<std::uint16_t> run_tau_;
  std::vector<std::uint8_t> run_act_;
  std::vector<double> start_values_;
  std::vector<float> idle_values_;  // per (tau / grid, ceil(w / grid), state)
  int value_rows_ = 0, value_cols_ = 0;
};

// What running a job by a policy is expected to cost, from a Monte Carlo of the chain
// (`samples` paths, deterministic for a seed): the figures `frugal why` prints.
struct SpotForecast {
  double mean_cost = 0;    // on-demand ticks
  double sd_cost = 0;
  double reclaims = 0;     // expected reclaims
  double miss_risk = 0;    // share of paths past the deadline
  double spot_share = 0;   // share of billed ticks on spot
};
SpotForecast Forecast(const SpotPolicy& policy,
                      const std::vector<std::vector<model::AvailabilityModel::Next>>& next,
                      const std::vector<std::uint8_t>& up, SpotJobState start, int samples,
                      std::uint64_t seed);

}  // namespace frugal::policy
