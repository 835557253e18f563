// One contract suite, run against every placement policy: whatever a policy optimises,
// these hold for every plan it makes.
#include <gtest/gtest.h>

#include "policy_test_util.h"
#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/placement/fifo_policy.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

template <typename P>
class PolicyContractTest : public ::testing::Test {
 protected:
  model::Plan Decide(const model::Snapshot& s) {
    model::Plan plan = P().Decide(s);
    for (const auto& v : PlanViolations(s, plan)) ADD_FAILURE() << P().Name() << ": " << v;
    return plan;
  }
  // Two pools of each kind, nodes of 4 and 8 GPUs, some busy.
  model::Snapshot Busy() {
    model::Snapshot s;
    s.now = T0();
    s.pools = {MakePool(1, "res", CapacityKind::kReserved, "a100", 2.0, 1.0, 80, 12),
               MakePool(2, "od", CapacityKind::kOnDemand, "a100", 3.0),
               MakePool(3, "spot", CapacityKind::kSpot, "a100", 1.0),
               MakePool(4, "l4", CapacityKind::kOnDemand, "l4", 0.8, 0.3, 24)};
    s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8), MakeNode(3, 2, 4), MakeNode(4, 3, 8),
               MakeNode(5, 4, 8, "l4", 24)};
    s.running = {MakeRunning(100, 90, 1, 6), MakeRunning(101, 91, 4, 2)};
    for (int i = 1; i <= 12; ++i) {
      auto j = MakeJob(i, 1 << (i % 4), i % 4, static_cast<Tolerance>(i % 3));
      if (i % 5 == 0) j.gpu_types = {"l4"};
      s.pending.push_back(j);
    }
    return s;
  }
};

using Policies = ::testing::Types<FifoPolicy, CostPolicy>;
TYPED_TEST_SUITE(PolicyContractTest, Policies);

TYPED_TEST(PolicyContractTest, SameSnapshotSamePlan) {
  auto s = this->Busy();
  EXPECT_TRUE(SamePlan(this->Decide(s), this->Decide(s)));
}

TYPED_TEST(PolicyContractTest, NeverOverANodesOrAPoolsCapacity) {
  // Pool 1 caps at 12 GPUs: 6 in use leaves 6 although its nodes have 10 free.
  auto s = this->Busy();
  auto plan = this->Decide(s);
  int in_pool_1 = 0;
  for (const auto& a : plan.assignments) in_pool_1 += a.node_id <= 2 ? a.gpus : 0;
  EXPECT_LE(in_pool_1, 6);
}

TYPED_TEST(PolicyContractTest, NeverPutsToleranceNoneOnSpot) {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(3, "spot", CapacityKind::kSpot, "a100", 1.0)};
  s.nodes = {MakeNode(4, 3, 8)};
  s.pending = {MakeJob(1, 1, 2, Tolerance::kNone), MakeJob(2, 1, 2, Tolerance::kCheckpointed)};
  auto plan = this->Decide(s);
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  EXPECT_EQ(AssignmentsOf(plan, 2).size(), 1u);
}

TYPED_TEST(PolicyContractTest, GangsAreAllOrNothing) {
  // 12 GPUs on three nodes, 10 free: a 12-GPU gang may never start on part of them.
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(2, "od", CapacityKind::kOnDemand)};
  s.nodes = {MakeNode(1, 2, 4), MakeNode(2, 2, 4), MakeNode(3, 2, 4)};
  s.running = {MakeRunning(100, 90, 3, 2)};
  s.pending = {MakeJob(1, 12), MakeJob(2, 8), MakeJob(3, 4)};
  auto plan = this->Decide(s);
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
}

TYPED_TEST(PolicyContractTest, EveryDecisionHasAReason) {
  auto s = this->Busy();
  s.pending[0].waiting_for = {77};
  s.pending[1].failed_dependency = 78;
  auto plan = this->Decide(s);  // PlanViolations checks reasons and one decision per job
  EXPECT_EQ(plan.holds.size(), 1u);
}

TYPED_TEST(PolicyContractTest, NothingNewOnANodeUnderNotice) {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(3, "spot", CapacityKind::kSpot, "a100", 1.0)};
  s.nodes = {MakeNode(4, 3, 8)};
  s.nodes[0].under_notice = true;
  s.pending = {MakeJob(1, 1)};
  EXPECT_TRUE(this->Decide(s).assignments.empty());
}

TYPED_TEST(PolicyContractTest, AnEmptySnapshotGivesAnEmptyPlan) {
  model::Snapshot s;
  auto plan = this->Decide(s);
  EXPECT_TRUE(plan.assignments.empty() && plan.waits.empty() && plan.stops.empty());
}

}  // namespace
}  // namespace frugal::policy
