// The Can't Be Late paper's own protocol (issue 14), as a check of the simulator against an
// independent implementation of it: the 12 single-instance, single-GPU series of the
// paper's three trace sets, each replayed at its own tick, 300 submission points per
// series, C0 = 48 h, the C0/R0 of experiment 1, d in {0.05, 0.2} h, no work lost to a
// reclaim. Only the paper's policies (Greedy, Uniform Progress) and the optimum run.
#pragma once

#include "bench/sim/experiments.h"
#include "bench/sim/traces.h"

namespace frugal::sim {

// The independent implementation's mean normalised costs (issue 14), the figures the mode
// must reproduce within kPaperTolerance each. They are an external reference, not results
// of this simulator.
inline constexpr double kPaperGreedy = 0.6705;
inline constexpr double kPaperUniformProgress = 0.6130;
inline constexpr double kPaperOptimum = 0.5586;
inline constexpr double kPaperTolerance = 0.005;

// `native`: the traces loaded at their own ticks (LoadTraces(dir, 0)); `grid`: the same on
// the simulator's grid, run under the same protocol to show what the grid changes.
Section RunPaperProtocol(const TraceSet& native, const TraceSet& grid, const SimOptions& options);

}  // namespace frugal::sim
