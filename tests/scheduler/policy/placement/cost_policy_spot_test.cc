// placement/cost scenarios of decision 0014: waiting for spot that comes back, and moving
// an on-demand job back to spot. Defaults: restore 5m, margin max(10m, 2 x 5m) = 10m.
// Pools: on-demand a100 $3/h (node 20), spot a100 $1/h, 0.1 reclaims per node-hour, 8 GPUs
// at most (node 30 when it is up).
#include <gtest/gtest.h>

#include "tests/scheduler/policy/placement/cost_policy_fixture.h"
#include "scheduler/policy/placement/migration.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

class SpotReturnTest : public CostPolicyTest {
 protected:
  void SetUp() override { SpotDown(); }
  model::PendingJob Job(Seconds deadline_in) { return CheckpointedJob(deadline_in); }
  model::RunningAttempt OnDemand(Seconds deadline_in, double progress = 0.5) {
    auto r = MakeRunning(100, 50, 20, 1);
    r.pool_id = 2;
    r.tolerance = Tolerance::kCheckpointed;
    r.estimate = 10h;
    r.checkpoint_interval = 1h;
    r.progress = progress;
    r.last_checkpoint_at = At(-10min);
    r.deadline = At(deadline_in);
    return r;
  }
};

// Slack 20h - 10h - 10m = 9h50m. Reserve: one worst reclaim 1h5m, expected rework
// 0.1/h x 10h x (30m + 5m) = 35m, and for each of the 1.06 expected reclaims one 5m restore
// back from on-demand: 1h45m. Slack beyond it: wait for spot.
TEST_F(SpotReturnTest, WaitsForSpotThatComesBackWhileSlackExceedsTheReserve) {
  s_.pending = {Job(20h)};
  auto plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  EXPECT_NE(WaitReason(plan, 1).find("waiting for spot a100-spot to come back"),
            std::string::npos)
      << WaitReason(plan, 1);
}

// Slack 11h30m - 10h - 10m = 1h20m < the reserve 1h45m: on-demand now.
TEST_F(SpotReturnTest, PaysOnDemandOnceTheSlackIsDownToTheReserve) {
  s_.pending = {Job(11h + 30min)};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

// A pool that is empty because the provider grows it on request is not "coming back".
TEST_F(SpotReturnTest, AnElasticSpotPoolIsAskedForANodeInstead) {
  s_.pools[1].elastic = true;
  s_.pending = {Job(20h)};
  auto plan = Decide();
  ASSERT_EQ(plan.node_requests.size(), 1u);
  EXPECT_EQ(plan.node_requests[0].pool_id, 3);
}

// On on-demand with 5h of work left from its checkpoint and 8h to go; spot is back with
// room. Slack 8h - (5h + 5m) - 10m = 2h45m covers a reclaim (1h + 5m). Expected stint
// 1 / 0.1 = 10h, capped at the 5h of work: saves 5h x $2 = $10, minus the restore on spot
// ($0.08) and, with probability 1 - e^-(0.1 x 5h5m) = 0.40, a restore on on-demand ($0.25)
// and half an hour of lost spot ($0.50): $10 - $0.08 - 0.40 x $0.75 = $9.62.
TEST_F(SpotReturnTest, MovesAnOnDemandJobBackToSpotWhenItPays) {
  s_.nodes.push_back(MakeNode(30, 3, 8));
  s_.running = {OnDemand(8h)};
  auto plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateToSpot);
  EXPECT_NE(plan.stops[0].reason.find("moving to spot a100-spot (has room again): expected to "
                                      "save $9.62"),
            std::string::npos)
      << plan.stops[0].reason;
  EXPECT_NEAR(MoveToSpotSaving(1, s_.pools[0], s_.pools[1], 5, 5.0 / 60, 1) / 1e6, 9.618, 0.001);
}

// 6h to go: slack 6h - 5h5m - 10m = 45m does not cover a reclaim (1h5m): it stays where it
// is (no stop, no new placement). With 6h30m to go the slack (1h15m) covers it and the same
// job moves: the slack alone decides.
TEST_F(SpotReturnTest, StaysOnDemandWhenTheSlackDoesNotCoverAReclaim) {
  s_.nodes.push_back(MakeNode(30, 3, 8));
  s_.running = {OnDemand(6h)};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 50).empty());
  EXPECT_TRUE(plan.node_requests.empty());
  s_.running = {OnDemand(6h + 30min)};
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].job_id, 50);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateToSpot);
}

// 1.2 minutes of work left (progress 0.998): spot would save 1.2m x $2 = $0.04, less than
// the 5m restore on spot costs ($0.08): it finishes where it is. The saving is negative:
// $0.04 - $0.083 - (1 - e^-(0.1 x 6.2m)) x $0.75 = -$0.051. With 12 minutes left (progress
// 0.98) it saves $0.40 - $0.083 - 0.028 x $0.75 = $0.30 and the same job moves.
TEST_F(SpotReturnTest, StaysOnDemandWhenTheChangeoverCostsMoreThanItSaves) {
  s_.nodes.push_back(MakeNode(30, 3, 8));
  s_.running = {OnDemand(8h, 0.998)};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 50).empty());
  EXPECT_NEAR(MoveToSpotSaving(1, s_.pools[0], s_.pools[1], 0.02, 5.0 / 60, 1) / 1e6, -0.051,
              0.001);
  s_.running = {OnDemand(8h, 0.98)};
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateToSpot);
  EXPECT_NE(plan.stops[0].reason.find("expected to save $0.30"), std::string::npos)
      << plan.stops[0].reason;
}

// The only spot node is taken by a pending job placed this cycle: no room is left to move to.
TEST_F(SpotReturnTest, MovesOnlyIntoRoomNoPendingJobTook) {
  s_.nodes.push_back(MakeNode(30, 3, 8));
  s_.running = {OnDemand(8h)};
  auto pending = MakeJob(1, 8, 2, Tolerance::kCheckpointed);
  pending.estimate = 1h;
  s_.pending = {pending};
  auto plan = Decide();
  EXPECT_EQ(NodeOf(plan, 1), 30);
  EXPECT_TRUE(plan.stops.empty());
}

// Reserved capacity is paid for whether used or not: a job there never moves to spot. The
// same job on the same pool, priced as on-demand, does (MovesAnOnDemandJobBackToSpotWhenItPays).
TEST_F(SpotReturnTest, NeverLeavesReservedForSpot) {
  s_.pools[0].kind = CapacityKind::kReserved;
  s_.nodes.push_back(MakeNode(30, 3, 8));
  s_.running = {OnDemand(8h)};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 50).empty());
  s_.pools[0].kind = CapacityKind::kOnDemand;
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateToSpot);
}

}  // namespace
}  // namespace frugal::policy
