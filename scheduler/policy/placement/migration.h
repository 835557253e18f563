// The scheduler's own moves of running checkpointed jobs, both ways between spot and
// on-demand (decision 0014). A move is a stop (the worker checkpoints, the attempt ends, the
// job is pending again) after which placement puts the job where it is now cheapest.
//  - Off spot (StopKind::kMigrateOffSpot): a job on spot whose deadline slack no longer
//    covers one more reclaim moves to safe capacity with room.
//  - To spot (StopKind::kMigrateToSpot): a job on on-demand moves to spot with room left
//    after this cycle's placements when its slack covers the spot risk and the saving it
//    expects before spot's next reclaim outweighs the changeovers the move costs.
#pragma once

#include "scheduler/model/snapshot.h"
#include "scheduler/policy/placement/free_room.h"
#include "scheduler/policy/policy_config.h"
#include "scheduler/policy/placement/spot_book.h"

namespace frugal::policy {

// Before placement: stops spot jobs whose slack runs out.
// With a `book`, a job on a spot pool with a learned table stays exactly while the learned
// controller says spot (issue 14); the slack rule decides the rest.
void MigrateOffSpot(const model::Snapshot& s, const FreeRoom& cap, const PolicyConfig& config,
                    model::Plan& plan, const SpotBook* book = nullptr);

// After placement (`cap` holds what this cycle placed): stops on-demand jobs that are
// cheaper on spot, and takes their room on spot so no other move claims it.
// With a `book`, a spot pool with a learned table is a move exactly when the learned
// controller, seeing the job on on-demand, says spot (its DP prices the changeovers).
void MigrateToSpot(const model::Snapshot& s, FreeRoom& cap, const PolicyConfig& config,
                   model::Plan& plan, const SpotBook* book = nullptr);

// What a move from `here` to a spot pool is expected to save, in micro-dollars (negative:
// not worth it): the hysteresis against flapping. Over the expected stint before the next
// reclaim, min(work left on spot, 1 / rate), the price difference for the work done; minus
// the restore paid on spot and, if a reclaim comes first (probability 1 - exp(-rate x
// (work + restore))), a restore back on `here` plus half a checkpoint interval of lost
// spot time.
double MoveToSpotSaving(double gpus, const model::Pool& here, const model::Pool& spot,
                        double work_hours, double restore_hours, double checkpoint_hours);

}  // namespace frugal::policy
