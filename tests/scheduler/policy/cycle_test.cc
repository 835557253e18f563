// DecideCycle: one cycle's whole decision (decision 0041). A scripted policy stands in for a
// real one so each step's effect on the plan is visible; the steps themselves are the real
// guardrail, quota and budget code.
#include "scheduler/policy/cycle.h"

#include <gtest/gtest.h>

#include "scheduler/policy/placement/fifo_policy.h"
#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;

// Returns `plan` whatever it sees, and remembers what it saw.
class ScriptedPolicy : public Policy {
 public:
  explicit ScriptedPolicy(model::Plan plan) : plan_(std::move(plan)) {}
  std::string Name() const override { return "test/scripted"; }
  model::Plan Decide(const model::Snapshot& s) const override {
    seen_ = s;
    return plan_;
  }
  const model::Snapshot& seen() const { return seen_; }

 private:
  model::Plan plan_;
  mutable model::Snapshot seen_;
};

constexpr model::TeamId kVision = 1;

// One on-demand pool (node 10, 8 GPUs) running attempt 1 (job 1001, 4 GPUs) for vision,
// idle since an hour ago under a requeue policy, with a checkpoint to resume from.
model::Snapshot IdleSnapshot() {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(1, "od", CapacityKind::kOnDemand)};
  s.nodes = {MakeNode(10, 1, 8)};
  model::RunningAttempt r = MakeRunning(1, 1001, 10, 4);
  r.pool_id = 1;
  r.team_id = kVision;
  r.node_name = "od-1";
  r.idle_since = At(-3600s);
  r.idle_policy = model::IdlePolicy::kRequeue;
  r.last_checkpoint_at = At(-600s);
  s.running = {r};
  return s;
}

TEST(DecideCycleTest, IdleOrdersComeFirstAndThePolicySeesTheirAttemptsStopping) {
  model::Snapshot s = IdleSnapshot();
  model::Plan scripted;
  // The policy would preempt the same attempt: the guardrail's order is the one kept.
  scripted.stops.push_back({1, 1001, model::StopKind::kPriorityPreemption, "preempted"});
  const ScriptedPolicy policy(scripted);
  const model::Plan plan = DecideCycle(s, policy, CycleDepth::kFull);
  ASSERT_EQ(plan.idle_actions.size(), 1u);
  EXPECT_EQ(plan.idle_actions[0].attempt_id, 1);
  EXPECT_EQ(plan.idle_actions[0].stop, model::IdleStep::kRequeue);
  EXPECT_TRUE(plan.idle_actions[0].warn);
  EXPECT_TRUE(plan.stops.empty()) << "one stop order per attempt";
  ASSERT_EQ(policy.seen().running.size(), 1u);
  EXPECT_TRUE(policy.seen().running[0].stopping);
  EXPECT_TRUE(s.running[0].stopping) << "marked for whoever reads the snapshot next";
  EXPECT_TRUE(s.running[0].idle_warned);
  // The next cycle, on the marked snapshot, orders nothing more.
  EXPECT_TRUE(DecideCycle(s, FifoPolicy(), CycleDepth::kFull).idle_actions.empty());
}

TEST(DecideCycleTest, ABusyAttemptGetsNoIdleOrderAndThePolicysStopsStand) {
  model::Snapshot s = IdleSnapshot();
  s.running[0].idle_since.reset();
  model::Plan scripted;
  scripted.stops.push_back({1, 1001, model::StopKind::kPriorityPreemption, "preempted"});
  const model::Plan plan = DecideCycle(s, ScriptedPolicy(scripted), CycleDepth::kFull);
  EXPECT_TRUE(plan.idle_actions.empty());
  ASSERT_EQ(plan.stops.size(), 1u);
  EXPECT_FALSE(s.running[0].stopping);
}

TEST(DecideCycleTest, OnlyAFullCycleReleasesNodes) {
  model::Snapshot s = IdleSnapshot();
  model::Plan scripted;
  scripted.node_releases.push_back({10, "idle"});
  const ScriptedPolicy policy(scripted);
  EXPECT_EQ(DecideCycle(s, policy, CycleDepth::kFull).node_releases.size(), 1u);
  EXPECT_TRUE(DecideCycle(s, policy, CycleDepth::kKicked).node_releases.empty());
}

TEST(DecideCycleTest, QuotasHoldWhateverThePolicyDecides) {
  model::Snapshot s = IdleSnapshot();
  s.running[0].idle_since.reset();
  s.quotas[kVision].by_kind[CapacityKind::kOnDemand] = 6;  // 4 in use
  model::PendingJob j = MakeJob(7, 4);
  j.team_id = kVision;
  s.pending = {j};
  model::Plan scripted;
  scripted.assignments.push_back({7, 10, 4, "placed", 0});
  const model::Plan plan = DecideCycle(s, ScriptedPolicy(scripted), CycleDepth::kFull);
  EXPECT_TRUE(plan.assignments.empty());
  const model::Wait* w = WaitOf(plan, 7);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, "waiting: over team quota: 4/6 on-demand GPUs in use");
}

TEST(DecideCycleTest, HardBudgetsHoldWhateverThePolicyDecides) {
  model::Snapshot s = IdleSnapshot();
  s.running[0].idle_since.reset();
  model::PendingJob j = MakeJob(7, 1);
  j.team_id = kVision;
  j.estimate = Seconds(10 * 3600);  // $30 on the $3/GPU-hour pool
  s.pending = {j};
  // $80 used of a $100 hard monthly budget: the job's $30 does not fit.
  s.budgets[kVision] = {
      "vision", model::BudgetPeriod::kMonthly, 100'000'000, 50'000'000, 30'000'000, true};
  model::Plan scripted;
  scripted.assignments.push_back({7, 10, 1, "placed", 0});
  const model::Plan plan = DecideCycle(s, ScriptedPolicy(scripted), CycleDepth::kFull);
  EXPECT_TRUE(plan.assignments.empty());
  const model::Wait* w = WaitOf(plan, 7);
  ASSERT_NE(w, nullptr);
  EXPECT_NE(w->reason.find("over budget: team vision used $80.00"), std::string::npos) << w->reason;
}

TEST(DecideCycleTest, AWaitIsRewrittenOnlyWhenItsReasonChanged) {
  model::Snapshot s = IdleSnapshot();
  s.running[0].idle_since.reset();
  model::PendingJob same = MakeJob(7, 16);
  same.reason = "waiting: no capacity";
  model::PendingJob changed = MakeJob(8, 16);
  changed.reason = "waiting: something else";
  s.pending = {same, changed};
  model::Plan scripted;
  scripted.waits = {{7, "waiting: no capacity"}, {8, "waiting: no capacity"}};
  const model::Plan plan = DecideCycle(s, ScriptedPolicy(scripted), CycleDepth::kFull);
  EXPECT_EQ(WaitOf(plan, 7), nullptr);
  ASSERT_NE(WaitOf(plan, 8), nullptr);
}

}  // namespace
}  // namespace frugal::policy
