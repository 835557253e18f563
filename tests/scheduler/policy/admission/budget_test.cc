// Hard team budgets (decision 0010): EnforceBudgets keeps any plan off paid capacity a team
// cannot afford, with the numbers in the reason; placement/cost falls back to reserved
// capacity (already paid) rather than waiting; soft budgets never hold anything; and no paid
// node is requested for a job the budget holds (decision 0016).
#include "scheduler/policy/admission/budget.h"

#include <gtest/gtest.h>

#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;

constexpr model::TeamId kVision = 1, kSpeech = 2;

// A 1-GPU job of 10 hours: $30.00 expected on the $3/GPU-hour on-demand pool.
model::PendingJob TenHourJob(model::JobId id, model::TeamId team) {
  model::PendingJob j = MakeJob(id, 1);
  j.team_id = team;
  j.estimate = Seconds(10 * 3600);
  return j;
}

// Reserved pool 1 (node 10, 8 GPUs, $1) and on-demand pool 2 (node 20, 8 GPUs, $3). Vision
// has used $80.00 of a $100.00 hard monthly budget.
model::Snapshot Cluster() {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(1, "res", CapacityKind::kReserved, "a100", 1.0),
             MakePool(2, "od", CapacityKind::kOnDemand, "a100", 3.0)};
  s.nodes = {MakeNode(10, 1, 8), MakeNode(20, 2, 8)};
  s.budgets[kVision] = {"vision", model::BudgetPeriod::kMonthly, 100'000'000, 50'000'000,
                        30'000'000, true};
  return s;
}

// The reserved node is full (a speech job holds all 8 GPUs).
model::Snapshot ReservedFull() {
  model::Snapshot s = Cluster();
  model::RunningAttempt r = MakeRunning(1, 900, 10, 8);
  r.pool_id = 1;
  r.team_id = kSpeech;
  s.running = {r};
  return s;
}

constexpr const char* kOverBudget =
    "waiting: over budget: team vision used $80.00 of its $100.00 monthly hard limit; this "
    "job's expected $30.00 does not fit; only reserved capacity is open";

TEST(BudgetTest, GuardDropsPaidAssignmentWithTheNumbersAsReason) {
  model::Snapshot s = ReservedFull();
  s.pending = {TenHourJob(1, kVision), TenHourJob(2, kSpeech)};
  model::Plan plan = FifoPolicy().Decide(s);
  ASSERT_EQ(AssignmentsOf(plan, 1).size(), 1u);  // fifo knows nothing of budgets
  EnforceBudgets(s, plan);
  // 80 + 30 > 100: vision's job is held; speech has no budget.
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  ASSERT_EQ(AssignmentsOf(plan, 2).size(), 1u);
  // Fifo does not price its choices: the guard does, so the attempt records it.
  EXPECT_EQ(AssignmentsOf(plan, 2)[0].expected_cost, 30'000'000);
  const model::Wait* w = WaitOf(plan, 1);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, kOverBudget);
}

TEST(BudgetTest, CostPolicyHoldsPaidButStillUsesReserved) {
  // a. Reserved full: on-demand would be the only option, and the budget closes it.
  model::Snapshot full = ReservedFull();
  full.pending = {TenHourJob(1, kVision)};
  model::Plan plan = CostPolicy().Decide(full);
  EnforceBudgets(full, plan);
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  ASSERT_NE(WaitOf(plan, 1), nullptr);
  EXPECT_EQ(WaitOf(plan, 1)->reason, kOverBudget);
  EXPECT_TRUE(plan.node_requests.empty());  // no paid capacity is bought for it either

  // b. Reserved free: the job runs there, budget or not (already paid).
  model::Snapshot free = Cluster();
  free.pending = {TenHourJob(1, kVision)};
  plan = CostPolicy().Decide(free);
  EnforceBudgets(free, plan);
  auto a = AssignmentsOf(plan, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].node_id, 10);
}

TEST(BudgetTest, CostPolicyLooksForReservedWhenPaidIsClosed) {
  // Reserved counted at its full price and dearer than on-demand here ($4 vs $3), so without
  // a budget placement/cost takes on-demand; with paid capacity closed it must take
  // reserved instead of waiting.
  PolicyConfig config;
  config.reserved_cost_weight = 1.0;
  const CostPolicy policy(config);
  model::Snapshot s = Cluster();
  s.pools[0].price_per_gpu_hour = 4'000'000;
  s.pending = {TenHourJob(1, kVision)};
  model::Snapshot no_budget = s;
  no_budget.budgets.clear();
  auto unbudgeted = AssignmentsOf(policy.Decide(no_budget), 1);
  ASSERT_EQ(unbudgeted.size(), 1u);
  ASSERT_EQ(unbudgeted[0].node_id, 20) << "the setup must make on-demand the first choice";
  model::Plan plan = policy.Decide(s);
  EnforceBudgets(s, plan, config);
  auto a = AssignmentsOf(plan, 1);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].node_id, 10);
}

TEST(BudgetTest, JobsAdmittedInOneCycleAddUp) {
  // $80 used, $20 left: one $15 job fits, the second (80 + 15 + 15 > 100) does not.
  model::Snapshot s = ReservedFull();
  s.budgets[kVision].committed = 0;
  s.budgets[kVision].spent = 80'000'000;
  model::PendingJob a = TenHourJob(1, kVision), b = TenHourJob(2, kVision);
  a.estimate = b.estimate = Seconds(5 * 3600);  // $15.00 each on on-demand
  s.pending = {a, b};
  model::Plan plan = FifoPolicy().Decide(s);
  EnforceBudgets(s, plan);
  EXPECT_EQ(AssignmentsOf(plan, 1).size(), 1u);
  EXPECT_TRUE(AssignmentsOf(plan, 2).empty());
  ASSERT_NE(WaitOf(plan, 2), nullptr);
  EXPECT_NE(WaitOf(plan, 2)->reason.find("used $95.00 of its $100.00"), std::string::npos)
      << WaitOf(plan, 2)->reason;
}

TEST(BudgetTest, SoftBudgetAndExactFitHoldNothing) {
  model::Snapshot s = ReservedFull();
  s.pending = {TenHourJob(1, kVision)};
  s.budgets[kVision].hard = false;
  model::Plan plan = FifoPolicy().Decide(s);
  EnforceBudgets(s, plan);
  EXPECT_EQ(AssignmentsOf(plan, 1).size(), 1u);
  // Hard, and 70 + 30 = 100 exactly: it fits.
  s.budgets[kVision].hard = true;
  s.budgets[kVision].committed = 20'000'000;
  plan = FifoPolicy().Decide(s);
  EnforceBudgets(s, plan);
  EXPECT_EQ(AssignmentsOf(plan, 1).size(), 1u);
}

// Reserved full for long, and the on-demand pool (node 20 gone) can grow by one-GPU nodes:
// placement/cost asks it for new nodes. Vision has $20.00 left: one $15.00 job (5 hours on
// on-demand) fits, two do not.
model::Snapshot Growable() {
  model::Snapshot s = ReservedFull();
  s.running[0].started_at = T0();
  s.running[0].estimate = Seconds(100 * 3600);  // no room on reserved for 100 hours
  s.nodes = {MakeNode(10, 1, 8)};
  s.pools[1].elastic = true;
  s.pools[1].node_gpus = 1;
  s.pools[1].max_gpus = 16;
  s.budgets[kVision].spent = 80'000'000;
  s.budgets[kVision].committed = 0;
  return s;
}

model::PendingJob FiveHourJob(model::JobId id, model::TeamId team) {
  model::PendingJob j = TenHourJob(id, team);
  j.estimate = Seconds(5 * 3600);  // $15.00 on on-demand
  return j;
}

TEST(BudgetTest, NodeRequestShrinksByTheJobsTheBudgetHolds) {
  model::Snapshot s = Growable();
  s.pending = {FiveHourJob(1, kVision), FiveHourJob(2, kVision), FiveHourJob(3, kSpeech)};
  model::Plan plan = CostPolicy().Decide(s);
  // Each vision job fits alone (80 + 15 <= 100), so the policy asks for all three.
  ASSERT_EQ(plan.node_requests.size(), 1u);
  ASSERT_EQ(plan.node_requests[0].gpus, 3);
  ASSERT_EQ(plan.node_requests[0].job_ids, (std::vector<model::JobId>{1, 2, 3}));
  const std::string first_reason = WaitOf(plan, 1)->reason;
  EnforceBudgets(s, plan);
  // Job 1 takes $15 (80 + 15 = 95); job 2 would make it 110 > 100: no node is started for
  // it. Speech has no budget: its node stays.
  ASSERT_EQ(plan.node_requests.size(), 1u);
  EXPECT_EQ(plan.node_requests[0].pool_id, 2);
  EXPECT_EQ(plan.node_requests[0].gpus, 2);
  EXPECT_EQ(plan.node_requests[0].job_ids, (std::vector<model::JobId>{1, 3}));
  EXPECT_NE(plan.node_requests[0].reason.find("1 GPU(s) fewer: job(s) 2 held by their team's "
                                              "hard budget"),
            std::string::npos)
      << plan.node_requests[0].reason;
  ASSERT_NE(WaitOf(plan, 2), nullptr);
  EXPECT_EQ(WaitOf(plan, 2)->reason,
            "waiting: over budget: team vision used $95.00 of its $100.00 monthly hard limit; "
            "this job's expected $15.00 does not fit; only reserved capacity is open");
  EXPECT_EQ(WaitOf(plan, 1)->reason, first_reason);  // still waiting for its new node
}

TEST(BudgetTest, NoNodeIsRequestedForAJobAnAdmittedOneLeftNoMoneyFor) {
  // One on-demand GPU is free now (node 20, 1 GPU): one job goes there, the other asks for a
  // new node; the first one's $15 leaves $5, so the second's node is not started.
  model::Snapshot s = Growable();
  s.nodes.push_back(MakeNode(20, 2, 1));
  s.pending = {FiveHourJob(1, kVision), FiveHourJob(2, kVision)};
  model::Plan plan = CostPolicy().Decide(s);
  ASSERT_EQ(AssignmentsOf(plan, 1).size(), 1u);
  ASSERT_EQ(plan.node_requests.size(), 1u);
  ASSERT_EQ(plan.node_requests[0].job_ids, (std::vector<model::JobId>{2}));
  EnforceBudgets(s, plan);
  EXPECT_EQ(AssignmentsOf(plan, 1).size(), 1u);
  EXPECT_TRUE(plan.node_requests.empty());
  ASSERT_NE(WaitOf(plan, 2), nullptr);
  EXPECT_NE(WaitOf(plan, 2)->reason.find("used $95.00 of its $100.00"), std::string::npos)
      << WaitOf(plan, 2)->reason;
}

TEST(BudgetTest, ReservedNodeRequestsStayOpenOverBudget) {
  // Vision has spent all $100; the reserved pool (already paid) may still grow for it.
  model::Snapshot s = Growable();
  s.nodes.clear();
  s.running.clear();
  s.pools[0].elastic = true;
  s.pools[0].node_gpus = 8;
  s.pools[0].max_gpus = 16;
  s.budgets[kVision].spent = 100'000'000;
  s.pending = {FiveHourJob(1, kVision)};
  model::Plan plan = CostPolicy().Decide(s);
  ASSERT_EQ(plan.node_requests.size(), 1u);
  ASSERT_EQ(plan.node_requests[0].pool_id, 1);
  EnforceBudgets(s, plan);
  ASSERT_EQ(plan.node_requests.size(), 1u);
  EXPECT_EQ(plan.node_requests[0].gpus, 1);
}

TEST(BudgetTest, ARequestNamingNoJobsGoesOnlyWhenEveryJobThatCouldUseItIsHeld) {
  // A policy that does not say whom a request is for: vision's job (over budget on it) is
  // the only one that could use on-demand, so the request goes.
  model::Snapshot s = Growable();
  s.budgets[kVision].spent = 90'000'000;  // $10 left, the job expects $15
  s.pending = {FiveHourJob(1, kVision)};
  model::Plan plan;
  plan.waits = {{1, "waiting: for capacity"}};
  plan.node_requests = {{2, 1, "a node for whoever"}};
  EnforceBudgets(s, plan);
  EXPECT_TRUE(plan.node_requests.empty());
  // a. A speech job could use it too: it stays.
  s.pending.push_back(FiveHourJob(2, kSpeech));
  plan.node_requests = {{2, 1, "a node for whoever"}};
  EnforceBudgets(s, plan);
  EXPECT_EQ(plan.node_requests.size(), 1u);
  // b. No waiting job could use the pool at all (types): not the budget's business.
  s.pending = {FiveHourJob(1, kVision)};
  s.pending[0].gpu_types = {"t4"};
  plan.node_requests = {{2, 1, "a node for whoever"}};
  EnforceBudgets(s, plan);
  EXPECT_EQ(plan.node_requests.size(), 1u);
  // c. A soft budget holds nothing.
  s.pending = {FiveHourJob(1, kVision)};
  s.budgets[kVision].hard = false;
  EnforceBudgets(s, plan);
  EXPECT_EQ(plan.node_requests.size(), 1u);
}

TEST(BudgetTest, MoneyTextGroupsThousands) {
  EXPECT_EQ(MoneyText(19'850'000'000), "$19,850.00");
  EXPECT_EQ(MoneyText(412'000'000), "$412.00");
  EXPECT_EQ(MoneyText(1'234'567'804'999), "$1,234,567.80");
  EXPECT_EQ(MoneyText(0), "$0.00");
}

}  // namespace
}  // namespace frugal::policy
