// The single-job engine of the cost simulator: one job on a Market, stepped over the grid,
// with a Controller (a baseline or the real placement/cost policy) choosing where it runs.
// Events fall on grid points only (reclaims, launches, checkpoints, completion), so the
// run is exact on the grid and the omniscient optimum (optimum.h) shares its arithmetic.
//
// Rules (docs/decisions/0008-simulator.md): every launch pays `changeover` steps at the new
// instance's price with no progress; billing is per second (a partial step is never
// billed: everything ends on a step boundary); a reclaim takes back the work of
// ReclaimLossSeconds (market.h: the final checkpoint's write when it fits in the pool's
// notice, else everything since the latest checkpoint); a voluntary stop (the controller
// moves the job) checkpoints first, as a stop order does. Work is counted in seconds so
// that a write shorter than a step costs what it costs; controllers see whole steps. Money
// is double dollars here: a benchmark sums millions of steps and the ledger's integer rule
// (CONVENTIONS.md 7) is about bills, not estimates.
#pragma once

#include <string>
#include <vector>

#include "bench/sim/market.h"

namespace frugal::sim {

// What a controller sees at the start of a step, after any reclaim in that step.
struct StepView {
  const Market* market = nullptr;
  const JobShape* job = nullptr;
  int t = 0;                 // steps since submission
  int step = 0;              // market step: job->start + t
  int progress = 0;          // whole steps of work done, unsaved included
  int saved = 0;             // whole steps of progress at the latest checkpoint
  int progress_seconds = 0;  // the same two in seconds (a notice's write may cost part
  int saved_seconds = 0;     // of a step)
  int where = kIdle;         // kIdle, kOnDemand or a zone
  int changeover_left = 0;   // launch steps still to pay on `where`
  int attempt_start = 0;     // t at which the current attempt launched
  int last_checkpoint = -1;  // t of the latest checkpoint (any attempt), -1: none
  int reclaimed_zone = -1;   // zone that reclaimed the job in this very step, else -1
  int reclaims = 0;          // reclaims so far

  int RemainingWork() const { return job->work - progress; }
  int RemainingTime() const { return job->deadline - t; }
};

class Controller {
 public:
  virtual ~Controller() = default;
  virtual std::string Name() const = 0;
  // Called before each run.
  virtual void Reset() {}
  // Where the job should be during this step: kIdle, kOnDemand or a zone that is up.
  // Returning view.where keeps it there (no new launch).
  virtual int Decide(const StepView& view) = 0;
};

// Per step of a recorded run: where the job was and what it did.
enum class Phase : signed char { kIdle, kChangeover, kRunning };
struct TimelineStep {
  int where = kIdle;
  Phase phase = Phase::kIdle;
  int progress = 0;
};

struct RunResult {
  double cost = 0;      // USD
  int finish = 0;       // steps after submission when the work completed
  bool missed = false;  // finished after the deadline
  int reclaims = 0;
  int lost_steps = 0;    // progress rolled back by reclaims, whole steps (rounded up)
  int lost_seconds = 0;  // the same in seconds
  int launches = 0;
  int spot_steps = 0, od_steps = 0;    // billed steps per kind
  std::vector<TimelineStep> timeline;  // when recorded
};

// Runs the job to completion. Past the deadline the engine takes over (finishes on
// on-demand, flags the miss) so every run has a cost. A controller asking for a zone that
// is down gets idle for that step.
RunResult RunJob(const Market& market, const JobShape& job, Controller& controller,
                 bool record = false);

}  // namespace frugal::sim
