// placement/cost with a learned mean outage (decision 0015): the expected wait for a spot
// pool whose nodes come back by themselves. Defaults: restore 5m, margin 10m. Pools:
// on-demand a100 $3/h (node 20); spot a100 $1/h, 0.1 reclaims per node-hour, down.
#include <gtest/gtest.h>

#include "tests/scheduler/policy/placement/cost_policy_fixture.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

class OutageTest : public CostPolicyTest {
 protected:
  void SetUp() override { SpotDown(); }
  // A second spot pool, up, at `price` per GPU-hour (node 40).
  void AddSpotWithRoom(double price) {
    s_.pools.push_back(MakePool(4, "a100-spot-b", CapacityKind::kSpot, "a100", price, 1.0, 80, 8));
    s_.pools.back().preemption_rate_per_node_hour = 0.1;
    s_.nodes.push_back(MakeNode(40, 4, 8));
  }
  model::PendingJob Job(Seconds deadline_in) { return CheckpointedJob(deadline_in); }
};

// Plenty of slack, but the cheaper pool saves $0.05/h over 10h while its 2h expected
// outage could cost 2h x ($3 - $1) on on-demand at the end: run on the other spot now.
TEST_F(OutageTest, RunsOnADearerSpotPoolRatherThanWaitOutALongOutageForAFewCents) {
  s_.pools[1].mean_outage_hours = 2;
  AddSpotWithRoom(1.05);
  s_.pending = {Job(40h)};
  EXPECT_EQ(NodeOf(Decide(), 1), 40);
}

// The same outage, but the waited-for pool is half the price: the saving outweighs it.
TEST_F(OutageTest, WaitsOutTheOutageWhenTheSavingOutweighsIt) {
  s_.pools[1].mean_outage_hours = 2;
  s_.pools[1].price_per_gpu_hour = 500'000;
  AddSpotWithRoom(1.05);
  s_.pending = {Job(40h)};
  auto plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  EXPECT_NE(WaitReason(plan, 1).find("waiting for spot a100-spot to come back"),
            std::string::npos)
      << WaitReason(plan, 1);
}

// Slack 1h20m is below the reserve (1h45m, decision 0014) but above one reclaim (1h5m).
// A 6-minute outage is shorter than the two 5-minute changeovers of going to on-demand and
// back would make worth it (6m x (1 - kappa) < 10m): sit it out.
TEST_F(OutageTest, SitsOutAnOutageShorterThanTheChangeoversBelowTheReserve) {
  s_.pools[1].mean_outage_hours = 0.1;
  s_.pending = {Job(11h + 30min)};
  auto plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty()) << "placed on node " << NodeOf(plan, 1);
}

// The same slack with an hour-long expected outage: on-demand now, as without it.
TEST_F(OutageTest, PaysOnDemandBelowTheReserveWhenTheOutageIsLong) {
  s_.pools[1].mean_outage_hours = 1;
  s_.pending = {Job(11h + 30min)};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

// Below the floor of one reclaim nothing is waited for, however short the outage.
TEST_F(OutageTest, NeverWaitsBelowOneReclaim) {
  s_.pools[1].mean_outage_hours = 0.1;
  s_.pending = {Job(11h)};  // slack 50m < 1h5m
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

TEST(LearnedOutageHoursTest, StartsAtThePriorAndMovesWithEachOutage) {
  EXPECT_DOUBLE_EQ(model::LearnedOutageHours(0, 0), model::kOutagePriorHours);
  // Three outages of 3h in all, with the prior's one hour: (1 + 3) / (1 + 3).
  EXPECT_DOUBLE_EQ(model::LearnedOutageHours(3, 3), 1.0);
  EXPECT_NEAR(model::LearnedOutageHours(100, 10), 11.0 / 101, 1e-12);
  EXPECT_DOUBLE_EQ(model::LearnedOutageHours(-1, -5), model::kOutagePriorHours);
}

}  // namespace
}  // namespace frugal::policy
