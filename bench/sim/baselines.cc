#include "bench/sim/baselines.h"

namespace frugal::sim {

int DeadlineRules(const StepView& v, int target, int extra) {
  const int left = v.RemainingWork() + extra, time = v.RemainingTime(), d = v.job->changeover;
  const bool on_spot = v.where >= 0;
  if (!on_spot && left + 2 * d >= time) target = kOnDemand;
  if (left + d >= time) target = on_spot && v.changeover_left == 0 ? v.where : kOnDemand;
  return target;
}

int Greedy::Decide(const StepView& v) {
  int target = kIdle;
  if (v.where >= 0)
    target = v.where;  // up, or the engine would have reclaimed it
  else if (v.market->Up(0, v.step))
    target = 0;
  return DeadlineRules(v, target);
}

std::string UniformProgress::Name() const {
  std::string name = "uniform-progress";
  if (hysteresis_ == Hysteresis::kSpotFirst) name += "-spot-first";
  if (keep_rework_) name += "-safe";
  return name;
}

int UniformProgress::Decide(const StepView& v) {
  const bool up = v.where >= 0 || v.market->Up(0, v.step);
  const int spot = v.where >= 0 ? v.where : 0;
  // Integer comparison of progress * R0 with C0 * t: no rounding at the boundary.
  const long long work = v.job->work, due = v.job->deadline;
  auto progress_x_due = static_cast<long long>(v.progress) * due;
  int target = up ? spot : kIdle;
  if (progress_x_due < work * v.t) target = up ? spot : kOnDemand;  // behind ep(t)
  if (v.where == kOnDemand) {
    const bool hysteresis = progress_x_due <= work * (v.t + 2LL * v.job->changeover);
    if (!up || (hysteresis && hysteresis_ == Hysteresis::kHolds)) target = kOnDemand;
  }
  return DeadlineRules(v, target, keep_rework_ ? v.job->checkpoint : 0);
}

int SkyPilotFailover::Decide(const StepView& v) {
  int best = kIdle;
  if (v.where >= 0) {
    best = v.where;
  } else {
    for (int z = 0; z < static_cast<int>(v.market->zones.size()); ++z) {
      if (z == v.reclaimed_zone || !v.market->Up(z, v.step)) continue;
      if (best == kIdle || v.market->Price(z, v.step) < v.market->Price(best, v.step)) best = z;
    }
  }
  // A job put on on-demand by the rules stays there (R - C no longer grows).
  if (v.where == kOnDemand) best = kOnDemand;
  return DeadlineRules(v, best);
}

}  // namespace frugal::sim
