#include "bench/sim/baselines.h"

namespace frugal::sim {

bool SafetyNet(const JobView& v, int extra) {
  return v.where < 0 && v.RemainingTime() < v.RemainingWork() + 2 * v.job->changeover + extra;
}

int Greedy::Decide(const JobView& v) {
  if (net_) return kOnDemand;
  if (v.where >= 0) return v.where;  // exploit spot until it is reclaimed
  if (SafetyNet(v)) {
    net_ = true;
    return kOnDemand;
  }
  return v.market->Up(0, v.step) ? 0 : kIdle;
}

int UniformProgress::Decide(const JobView& v) {
  if (net_) return kOnDemand;
  if (SafetyNet(v, keep_rework_ ? v.job->checkpoint : 0)) {
    net_ = true;
    return kOnDemand;
  }
  if (v.where >= 0) return v.where;
  if (v.market->Up(0, v.step)) return 0;  // taking risks: spot even when behind
  // Integer comparison of progress * R0 with C0 * t: no rounding at the boundary.
  const long long work = v.job->work, due = v.job->deadline;
  auto behind = [&](long long t) { return v.progress * due < work * t; };
  if (v.where == kOnDemand && behind(v.t + 2LL * v.job->changeover)) return kOnDemand;
  return behind(v.t) ? kOnDemand : kIdle;
}

int SkyPilotFailover::Decide(const JobView& v) {
  if (net_) return kOnDemand;
  if (v.where >= 0) return v.where;
  if (SafetyNet(v)) {
    net_ = true;
    return kOnDemand;
  }
  int best = kIdle;
  for (int z = 0; z < static_cast<int>(v.market->zones.size()); ++z) {
    if (z == v.reclaimed_zone || !v.market->Up(z, v.step)) continue;
    if (best == kIdle || v.market->Price(z, v.step) < v.market->Price(best, v.step)) best = z;
  }
  return best;
}

}  // namespace frugal::sim
