// Idle GPU reclamation, one step of the leader's cycle: the idle attempts come with the
// cycle's snapshot (idle_since from heartbeats, in database time); the pure
// policy::DecideIdle decides; the store applies warnings and stop orders.
//
// Threading: called on the engine's strand only.
#pragma once

#include "common/status.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/store/job_store.h"

namespace frugal::engine {

// Decides over `snapshot`'s idle attempts and applies the actions, then marks the attempts
// it ordered to stop as stopping (and the warned ones as warned) in `snapshot`, so the rest
// of the cycle sees what a snapshot loaded after the orders would: Decide must not plan
// around GPUs that are already being given back. Returns how many stop orders were written.
StatusOr<int> ReclaimIdleGpus(store::JobStore& store, model::Snapshot& snapshot);

}  // namespace frugal::engine
