// The published single-job baselines of "Can't Be Late" (Wu et al., NSDI'24), written from
// their definitions as issue 6 quotes them, plus SkyPilot's managed-spot failover. Each is
// a Controller for the single-job engine; they keep only the Safety Net latch as state.
//
// R = time left to the deadline, C = work left, d = changeover, all in steps.
// Safety Net: when the job is not on spot and R < C + 2d, on-demand until done. (The
// paper says "when idle"; not on spot also covers on-demand, where Uniform Progress would
// otherwise leave for spot with too little time left to survive a reclaim.)
#pragma once

#include <string>

#include "bench/sim/engine.h"

namespace frugal::sim {

// On-demand from submission to completion: the normaliser (cost 1).
class OnDemandOnly final : public Controller {
 public:
  std::string Name() const override { return "on-demand"; }
  int Decide(const JobView&) override { return kOnDemand; }
};

// Spot in zone 0 whenever up, otherwise idle; once on spot stay until reclaimed; Safety Net.
class Greedy final : public Controller {
 public:
  std::string Name() const override { return "greedy"; }
  void Reset() override { net_ = false; }
  int Decide(const JobView& v) override;

 private:
  bool net_ = false;
};

// Expected progress ep(t) = C0 * t / R0. Spot in zone 0 whenever up (even when behind),
// stay until reclaimed; when not on spot and behind ep(t), on-demand; once on on-demand,
// stay until progress >= ep(t + 2d) (hysteresis) unless spot comes up; Safety Net.
//
// `keep_rework` is a variant, not a published baseline: its Safety Net also keeps one
// checkpoint interval, the most work a reclaim can take back, so that a reclaim just before
// the net fires cannot make it miss. The published net assumes no work is lost (the
// paper's model); with checkpoints it misses, and its misses are part of its low cost.
class UniformProgress final : public Controller {
 public:
  explicit UniformProgress(bool keep_rework = false) : keep_rework_(keep_rework) {}
  std::string Name() const override {
    return keep_rework_ ? "uniform-progress-safe" : "uniform-progress";
  }
  void Reset() override { net_ = false; }
  int Decide(const JobView& v) override;

 private:
  bool keep_rework_;
  bool net_ = false;
};

// SkyPilot managed spot with EAGER_NEXT_REGION over every zone of the market: launch in the
// cheapest zone that is up; on a reclaim, relaunch at once in the cheapest *other* zone
// that is up (idle and retry every step when none is); on-demand only by the Safety Net.
class SkyPilotFailover final : public Controller {
 public:
  std::string Name() const override { return "skypilot"; }
  void Reset() override { net_ = false; }
  int Decide(const JobView& v) override;

 private:
  bool net_ = false;
};

// True when the Safety Net must fire: not on spot and R < C + 2d (+ `extra` steps).
bool SafetyNet(const JobView& v, int extra = 0);

}  // namespace frugal::sim
