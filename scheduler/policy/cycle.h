// One scheduling cycle's decision, whole: the idle guardrail, the policy, then the limits
// no policy may exceed. Pure: no I/O, no clock (the snapshot's `now`), no state. The engine
// loads a snapshot, calls DecideCycle, and applies the plan in one transaction
// (CycleStore::ApplyPlan); the cost simulator calls DecideCycle too, so what it measures is
// the decision the scheduler makes, quotas and hard budgets included (decision 0041).
#pragma once

#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy.h"

namespace frugal::policy {

// What a cycle read. A kicked cycle (a submit or a finish asked for it) reads a short
// window of pending jobs, so it may not see the jobs an idle node is kept for (a gang
// waiting for more nodes): it releases no node. Releases wait minutes anyway.
enum class CycleDepth { kFull, kKicked };

// In order:
//  1. DecideIdle over the snapshot's idle attempts -> plan.idle_actions. The attempts they
//     stop are marked stopping in `snapshot` (as applying the plan makes them), so step 2
//     and whoever reads the snapshot after (the capacity provider) see them stopping.
//  2. policy.Decide(snapshot).
//  3. A kicked cycle drops node releases.
//  4. EnforceQuotas, then EnforceBudgets priced with policy.config(): whatever the policy
//     decided, no quota or hard budget is exceeded.
//  5. Waits whose reason the job already shows are dropped: a cycle rewrites only the
//     reasons that changed.
// Deterministic in (snapshot, policy, depth), as Policy::Decide is.
model::Plan DecideCycle(model::Snapshot& snapshot, const Policy& policy, CycleDepth depth);

}  // namespace frugal::policy
