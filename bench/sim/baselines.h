// The published single-job baselines of "Can't Be Late" (Wu et al., NSDI'24) as the
// authors' released simulator runs them, plus SkyPilot's managed-spot failover. Each is a
// Controller for the single-job engine.
//
// Followed line by line: the authors' `sky_spot` simulator, strategies `strawman` (Greedy)
// and `rc_cr_threshold` (Uniform Progress), as kept in the SkyPilot spot-simulator
// repository the paper's artifact grew into (sky_spot/strategies/strawman.py and
// rc_cr_threshold.py; the early repo github.com/Michaelvll/skypilot-spot-strategy @1c36973
// has the same strawman with a d-only net). Decision 0008 says what differs and why.
//
// R = time left to the deadline, C = work left, d = changeover, all in whole steps (the
// simulator's ceil(C + d) >= floor(R) on its tick is C + d >= R on ours). Both share the
// authors' deadline rules, evaluated every step (no latch: once on on-demand R - C never
// grows, so they hold by themselves):
//   net 2d: not on spot and R <= C + 2d           -> on-demand;
//   net d:  R <= C + d: on spot past its changeover -> stay on spot, otherwise on-demand.
#pragma once

#include <string>

#include "bench/sim/single_job_sim.h"

namespace frugal::sim {

// On-demand from submission to completion: the normaliser (cost 1).
class OnDemandOnly final : public Controller {
 public:
  std::string Name() const override { return "on-demand"; }
  int Decide(const StepView&) override { return kOnDemand; }
};

// `strawman`: spot in zone 0 whenever up, otherwise idle (a job on spot stays while it is
// up); the deadline rules above.
class Greedy final : public Controller {
 public:
  std::string Name() const override { return "greedy"; }
  int Decide(const StepView& v) override;
};

// Expected progress ep(t) = C0 * t / R0. `rc_cr_threshold`:
//   default: spot in zone 0 when up, else idle;
//   behind ep(t): spot when up, else on-demand (catch up);
//   on on-demand: stay while spot is down, or while progress <= ep(t + 2d) (hysteresis,
//     which holds even when spot is up); so on-demand is left only for spot, never idle;
//   then the deadline rules.
// Variants (labelled, not the authors'):
//   kSpotFirst: on on-demand, spot overrides the hysteresis (on-demand still left only for
//     spot). The paper's text reads this way ("switch to spot whenever available").
//   keep_rework: both deadline rules also keep one checkpoint interval, the most work a
//     reclaim can take back; the authors' rules assume a reclaim loses nothing and miss
//     deadlines when it does.
class UniformProgress final : public Controller {
 public:
  enum class Hysteresis { kHolds, kSpotFirst };
  explicit UniformProgress(Hysteresis hysteresis = Hysteresis::kHolds, bool keep_rework = false)
      : hysteresis_(hysteresis), keep_rework_(keep_rework) {}
  std::string Name() const override;
  int Decide(const StepView& v) override;

 private:
  Hysteresis hysteresis_;
  bool keep_rework_;
};

// SkyPilot managed spot with EAGER_NEXT_REGION over every zone of the market: launch in the
// cheapest zone that is up; on a reclaim, relaunch at once in the cheapest *other* zone
// that is up (idle and retry every step when none is); on-demand only by the deadline
// rules above.
class SkyPilotFailover final : public Controller {
 public:
  std::string Name() const override { return "skypilot"; }
  int Decide(const StepView& v) override;
};

// The authors' deadline rules applied to a proposed `target`; `extra` steps are added to
// the work left (keep_rework).
int DeadlineRules(const StepView& v, int target, int extra = 0);

}  // namespace frugal::sim
