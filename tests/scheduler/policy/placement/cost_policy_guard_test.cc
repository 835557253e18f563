// placement/cost scenarios about the guards: deadline migration off spot, priority
// preemption without storms, and the wait option. Same defaults as cost_policy_test.cc.
#include <gtest/gtest.h>

#include "tests/scheduler/policy/placement/cost_policy_fixture.h"
#include "scheduler/policy/placement/cost_policy.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

// Running on spot: checkpointed, 10h estimate, progress 0.5 at its last checkpoint 30m ago.
// Left: 5h + 5m restore on on-demand, margin max(10m, 2 x 5m) = 10m. The slack counts from
// the checkpoint, so the 30m since are written off already; a reclaim can still take the
// 30m until the next checkpoint (interval 1h). It must move once
// deadline - now < 5h5m + 10m + 30m = 5h45m.
class MigrationTest : public CostPolicyTest {
 protected:
  void SetUp() override {
    s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0),
                MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0)};
    s_.pools[1].preemption_rate_per_node_hour = 0.1;
    s_.nodes = {MakeNode(20, 2, 8), MakeNode(30, 3, 8)};
  }
  model::RunningAttempt OnSpot(Seconds deadline_in) {
    auto r = MakeRunning(100, 50, 30, 1);
    r.pool_id = 3;
    r.tolerance = Tolerance::kCheckpointed;
    r.estimate = 10h;
    r.checkpoint_interval = 1h;
    r.progress = 0.5;
    r.last_checkpoint_at = At(-30min);
    r.deadline = At(deadline_in);
    return r;
  }
};

TEST_F(MigrationTest, MovesACheckpointedJobOffSpotWhenSlackRunsLow) {
  s_.running = {OnSpot(5h + 40min)};  // slack 5h40m - 5h5m - 10m = 25m < 30m
  auto plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 100);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateOffSpot);
  EXPECT_NE(plan.stops[0].reason.find("moving off spot a100-spot before the deadline"),
            std::string::npos);
  EXPECT_NE(plan.stops[0].reason.find("checkpoint and resume on on-demand a100-od"),
            std::string::npos);
}

// It stays (no stop, not placed anew) down to the minute the slack equals the exposure; one
// minute later it moves.
TEST_F(MigrationTest, StaysOnSpotWhileSlackCoversAReclaim) {
  s_.running = {OnSpot(5h + 50min)};  // slack 5h50m - 5h15m = 35m >= 30m
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 50).empty());
  s_.running = {OnSpot(5h + 45min)};  // slack 30m = 30m
  EXPECT_TRUE(Decide().stops.empty());
  s_.running = {OnSpot(5h + 44min)};  // slack 29m < 30m
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateOffSpot);
}

// The job of MovesACheckpointedJobOffSpotWhenSlackRunsLow, with one thing changed each time,
// stays; with half the on-demand node free instead of all of it taken, it moves again.
TEST_F(MigrationTest, DoesNotMoveWithoutSafeRoomOrCheckpoints) {
  auto restartable = OnSpot(5h + 40min);
  restartable.tolerance = Tolerance::kRestartable;  // moving would lose everything
  s_.running = {restartable};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 50).empty());
  s_.running = {OnSpot(5h + 40min), MakeRunning(101, 51, 20, 8)};  // on-demand is full
  plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 50).empty());
  s_.running = {OnSpot(5h + 40min), MakeRunning(101, 51, 20, 4)};  // 4 GPUs free there
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 100);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateOffSpot);
}

// One on-demand node of 8 GPUs, full with two low-class jobs of 4 GPUs, both running 2h.
// Job 50 checkpointed 10m ago: loses 4 x 10m = 0.67 GPU-h + 4 x 5m restore = 0.33 GPU-h.
// Job 51 is restartable: loses 4 x 2h = 8 GPU-h. A critical 4-GPU job arrives.
class PreemptionTest : public CostPolicyTest {
 protected:
  void SetUp() override {
    s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0)};
    s_.nodes = {MakeNode(20, 2, 8)};
    checkpointed_ = MakeRunning(100, 50, 20, 4, /*rank=*/3);
    checkpointed_.tolerance = Tolerance::kCheckpointed;
    checkpointed_.last_checkpoint_at = At(-10min);
    restartable_ = MakeRunning(101, 51, 20, 4, /*rank=*/3);
    s_.pending = {MakeJob(1, 4, /*rank=*/0)};
  }
  model::RunningAttempt checkpointed_, restartable_;
};

TEST_F(PreemptionTest, PicksTheVictimThatLosesTheLeastWork) {
  s_.running = {checkpointed_, restartable_};
  auto plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 100);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kPriorityPreemption);
  EXPECT_NE(plan.stops[0].reason.find("job 1 (critical) needs 4 GPU(s) on node-20"),
            std::string::npos)
      << plan.stops[0].reason;
  EXPECT_NE(plan.stops[0].reason.find("0.67 GPU-h since its last checkpoint, 0.33 GPU-h"),
            std::string::npos)
      << plan.stops[0].reason;
  EXPECT_EQ(WaitReason(plan, 1),
            "waiting: preempting job(s) 50 on node-20 to make room for 4 GPU(s) (class "
            "critical): the least work lost");
}

TEST_F(PreemptionTest, NoStormAJobPreemptedBeforeIsSparedUntilItCheckpoints) {
  // Job 50 was preempted by priority 1h ago and its checkpoint is older than that.
  checkpointed_.last_priority_preemption_at = At(-1h);
  checkpointed_.last_checkpoint_at = At(-90min);
  s_.running = {checkpointed_, restartable_};
  auto plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 101);
  // Once it has checkpointed since, it is the cheapest victim again.
  checkpointed_.last_checkpoint_at = At(-10min);
  s_.running = {checkpointed_, restartable_};
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 100);
}

TEST_F(PreemptionTest, SparesJobsBelowTheMinimumRunTimeAndToleranceNone) {
  checkpointed_.started_at = At(-5min);  // < 10m
  restartable_.tolerance = Tolerance::kNone;
  s_.running = {checkpointed_, restartable_};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  // `why` says when the protection ends and the preemption will make room (issue 17).
  EXPECT_EQ(WaitReason(plan, 1),
            "waiting: no room for 4 GPU(s) in the pool(s) it may use (a100-od); job 1 can "
            "preempt job 50 at 00:05 UTC, when its 10-minute protection ends");
  // Tolerance none is never preempted: no time is promised for it alone.
  checkpointed_.tolerance = Tolerance::kNone;
  s_.running = {checkpointed_, restartable_};
  EXPECT_EQ(WaitReason(Decide(), 1),
            "waiting: no room for 4 GPU(s) in the pool(s) it may use (a100-od)");
}

// The protection window is per priority class (issue 17): the store gives each running
// attempt its class's min_run_time; unset, the policy's default (10 minutes) holds.
TEST_F(PreemptionTest, TheProtectionWindowIsTheVictimsClasses) {
  checkpointed_.started_at = At(-5min);
  restartable_.tolerance = Tolerance::kNone;
  checkpointed_.min_run_time = 2min;  // its class protects for 2 minutes only
  s_.running = {checkpointed_, restartable_};
  auto plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 100);
  checkpointed_.min_run_time = 30min;
  s_.running = {checkpointed_, restartable_};
  plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_NE(WaitReason(plan, 1).find("job 1 can preempt job 50 at 00:25 UTC, when its "
                                     "30-minute protection ends"),
            std::string::npos)
      << WaitReason(plan, 1);
}

// Both jobs of the critical class: the critical job waits for room, with no preemption
// offered; make one of them low class again and it is the victim.
TEST_F(PreemptionTest, NeverPreemptsTheSameOrAHigherClass) {
  checkpointed_.priority_rank = 0;
  restartable_.priority_rank = 0;
  s_.running = {checkpointed_, restartable_};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  EXPECT_EQ(WaitReason(plan, 1),
            "waiting: no room for 4 GPU(s) in the pool(s) it may use (a100-od)");
  restartable_.priority_rank = 3;
  s_.running = {checkpointed_, restartable_};
  plan = Decide();
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_EQ(plan.stops[0].attempt_id, 101);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kPriorityPreemption);
}

TEST_F(PreemptionTest, KeepsGpusOfStoppingAttemptsForThePreemptor) {
  // Last cycle's victim (attempt 100) is stopping; 4 GPUs are free. The critical job waits
  // for it, and the low job 2 may not take the 4 free GPUs meanwhile.
  checkpointed_.stopping = true;
  s_.running = {checkpointed_};
  s_.pending = {MakeJob(1, 8, 0), MakeJob(2, 4, 3)};
  auto plan = Decide();
  EXPECT_TRUE(plan.assignments.empty());
  EXPECT_TRUE(plan.stops.empty());
  EXPECT_EQ(WaitReason(plan, 1), "waiting: 8 GPU(s) on node-20 free up as attempt(s) 100 stop");
}

// Reserved node 10 is full with job 60 (8 GPUs, 2h40m estimate, started 2h ago): room
// expected in 40m. On-demand node 20 is free. The pending jobs need 1 GPU for 2h.
class WaitTest : public CostPolicyTest {
 protected:
  void SetUp() override {
    ThreePools();
    s_.nodes = {MakeNode(10, 1, 8), MakeNode(20, 2, 8)};
    auto busy = MakeRunning(200, 60, 10, 8);
    busy.pool_id = 1;
    busy.estimate = 160min;
    s_.running = {busy};
  }
  model::PendingJob Job(model::JobId id) {
    auto j = MakeJob(id, 1, 2, Tolerance::kNone);
    j.estimate = 2h;
    return j;
  }
};

TEST_F(WaitTest, WaitingBeatsPayingWhenSlackAllows) {
  // Deadline 10h: safe run 2h, margin max(10m, 2 x 5m restore) = 10m, slack 7h50m; the
  // wait (40m) leaves 7h10m > 6h horizon, so waiting costs as little as reserved. On-demand
  // would cost $3 x 2h = $6.00.
  auto j = Job(1);
  j.deadline = At(10h);
  s_.pending = {j};
  auto plan = Decide();
  EXPECT_TRUE(plan.assignments.empty());
  EXPECT_EQ(WaitReason(plan, 1),
            "waiting for reserved a100-reserved (room expected in ~40m): slack 7h50m covers the "
            "wait; on-demand a100-od now would cost $6.00 more");
}

TEST_F(WaitTest, PaysWhenTheWaitWouldEatTheSlack) {
  // Deadline 2h30m: slack 2h30m - 2h - 10m = 20m < 40m wait: on-demand now.
  auto j = Job(1);
  j.deadline = At(150min);
  s_.pending = {j};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

TEST_F(WaitTest, WithoutADeadlineWaitsAtMostTheConfiguredPatience) {
  // Patience 1h: job 1 (just submitted) + 40m wait < 1h: waits. Job 2 (submitted 30m ago)
  // + 40m > 1h: pays for on-demand now.
  auto fresh = Job(1), older = Job(2);
  older.created_at = At(-30min);
  s_.pending = {fresh, older};
  auto plan = Decide();
  EXPECT_NE(WaitReason(plan, 1).find("waiting for reserved a100-reserved"), std::string::npos);
  EXPECT_EQ(NodeOf(plan, 2), 20);
}

}  // namespace
}  // namespace frugal::policy
