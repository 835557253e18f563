// The omniscient optimum of one single-job run: the least cost at which the job can finish
// by its deadline when the whole future of every zone is known. It is the lower bound
// every policy is measured against (share of savings captured).
//
// Dynamic programming over time x progress x instance state on the engine's grid (same
// prices, same changeover, same availability). An omniscient job never loses work to a
// reclaim: it can stop, checkpointing, in the step before one; so the optimum is that of
// the engine's rules with no checkpoint loss, and no run of the engine costs less.
#pragma once

#include "bench/sim/market.h"

namespace frugal::sim {

// Least cost in USD, or +infinity when no schedule finishes by the deadline.
// Needs job.changeover >= 1. O(deadline x slack x (zones + 2)) time, O(changeover x work x
// zones) memory.
double OptimumCost(const Market& market, const JobShape& job);

}  // namespace frugal::sim
