// Idle GPU reclamation, one step of the leader's cycle: load the idle attempts (database
// time), decide with the pure policy::DecideIdle, apply warnings and stop orders.
//
// Threading: called on the engine's strand only.
#pragma once

#include "common/status.h"
#include "scheduler/store/job_store.h"

namespace frugal::engine {

// Returns how many stop orders (requeue or stop) were written.
StatusOr<int> ReclaimIdleGpus(store::JobStore& store);

}  // namespace frugal::engine
