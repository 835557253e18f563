// A lower bound on what any scheduler that meets every deadline pays for experiment 4's
// jobs when no GPUs are reserved: every job alone, with unlimited spot capacity, no
// startup, no idle node and a view of the future. A bar below it is out of every such
// policy's reach (issue 14). A schedule that runs past deadlines may pay less.
#pragma once

#include "bench/sim/cluster_sim.h"

namespace frugal::sim {

struct CostFloor {
  double total = 0;
  double on_demand = 0;  // the part that must run on on-demand
  double spot = 0;
};

// Per job: tolerance none: on-demand. Checkpointed: the work at the lowest spot price seen
// in any zone that is up during the job's window (on-demand if lower or none is up).
// Restartable: the lowest spot price of a zone that stays up for the whole run somewhere
// in the window (on-demand if none does). Prices and steps as the cluster engine reads them.
CostFloor NoReservedFloor(const ClusterSetup& setup);

}  // namespace frugal::sim
