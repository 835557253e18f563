#include "scheduler/policy/placement/free_room.h"

#include <gtest/gtest.h>

#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;

TEST(FreeRoomTest, BestFitTakesTheFullestNodeThatStillFits) {
  model::Snapshot s;
  s.pools = {MakePool(1, "p", CapacityKind::kOnDemand)};
  s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8), MakeNode(3, 1, 8)};
  s.running = {MakeRunning(10, 10, 2, 5), MakeRunning(11, 11, 3, 6)};  // free: 8, 3, 2
  FreeRoom cap(s, PolicyConfig{});
  EXPECT_EQ(cap.FreeGpus(0), 13);
  EXPECT_EQ(cap.Usable(0, 2, true), 8 + 2 + 2);  // 4 pairs on node 1, one each on 2 and 3
  auto a = cap.Take(0, 2, true);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].node, 3);  // 2 free: an exact fit
  auto b = cap.Take(0, 3, true);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].node, 2);
  EXPECT_TRUE(cap.Take(0, 9, false).empty());
  EXPECT_EQ(cap.FreeGpus(0), 8);
}

// Two 8-GPU nodes: node 1 has 2 free and its work ends in 30 minutes, node 2 has 6 free
// and its work ends in 5 hours.
model::Snapshot NodesWithWorkEnding(CapacityKind kind) {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(1, "p", kind)};
  s.pools[0].idle_timeout = 10min;
  s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8)};
  s.running = {MakeRunning(10, 10, 1, 6), MakeRunning(11, 11, 2, 2)};
  s.running[0].estimate = Seconds(150 * 60);  // started 2 h ago
  s.running[1].estimate = 7h;
  return s;
}

TEST(FreeRoomTest, OnABilledPoolAJobGoesWhereItKeepsTheFewestGpusIdle) {
  auto s = NodesWithWorkEnding(CapacityKind::kOnDemand);
  FreeRoom::Stay two_hours{2.0, kNoLimit};
  {
    FreeRoom cap(s, PolicyConfig{});
    auto a = cap.Take(0, 1, false, 1, two_hours);  // node 1 would idle 7 GPUs for 1.5 h
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].node, 2);
    // A 6-hour job: 7 GPUs idle for 1 h on node 2 against 5.5 h on node 1.
    auto b = cap.Take(0, 1, false, 1, FreeRoom::Stay{6.0, kNoLimit});
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].node, 2);
  }
  {
    FreeRoom cap(s, PolicyConfig{});
    auto a = cap.Take(0, 1, false);  // no stay: best fit alone
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].node, 1);
  }
  // Reserved GPUs are paid whether they idle or not: best fit.
  auto r = NodesWithWorkEnding(CapacityKind::kReserved);
  FreeRoom cap(r, PolicyConfig{});
  auto a = cap.Take(0, 1, false, 1, two_hours);
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].node, 1);
}

TEST(FreeRoomTest, AJobDeclinesANodeItWouldKeepMostlyIdle) {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(1, "p", CapacityKind::kOnDemand)};
  s.pools[0].idle_timeout = 10min;
  s.nodes = {MakeNode(1, 1, 8)};
  FreeRoom cap(s, PolicyConfig{});
  // 1 GPU for 4 h on an empty 8-GPU node: 28 idle GPU-hours, against 0.1 for a node of its own.
  EXPECT_TRUE(cap.Take(0, 1, false, 1, FreeRoom::Stay{4.0, 0.1}).empty());
  EXPECT_TRUE(cap.NodeDeclined(1));
  EXPECT_EQ(cap.FreeGpus(0), 8);
  // A one-minute job idles 7 GPU-minutes (0.117 GPU-hours): still more than 0.1.
  EXPECT_TRUE(cap.Take(0, 1, false, 1, FreeRoom::Stay{1.0 / 60, 0.1}).empty());
  // Half a minute (0.058) is less.
  auto a = cap.Take(0, 1, false, 1, FreeRoom::Stay{0.5 / 60, 0.1});
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].node, 1);

  // A job that fills the node idles nothing; with no limit, any node that fits.
  FreeRoom fresh(s, PolicyConfig{});
  auto whole = fresh.Take(0, 8, false, 1, FreeRoom::Stay{4.0, 0.1});
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_FALSE(fresh.NodeDeclined(1));
  FreeRoom any(s, PolicyConfig{});
  EXPECT_EQ(any.Take(0, 1, false, 1, FreeRoom::Stay{4.0, kNoLimit}).size(), 1u);
}

TEST(FreeRoomTest, BigGangsSpanTheFewestNodesOfOnePool) {
  model::Snapshot s;
  s.pools = {MakePool(1, "p", CapacityKind::kOnDemand)};
  s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8), MakeNode(3, 1, 8)};
  s.running = {MakeRunning(10, 10, 1, 4)};  // free: 4, 8, 8
  FreeRoom cap(s, PolicyConfig{});
  auto parts = cap.Take(0, 12, true);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node, 2);  // a whole node first,
  EXPECT_EQ(parts[0].gpus, 8);
  EXPECT_EQ(parts[1].node, 1);  // then the best fit for the last 4
  EXPECT_EQ(parts[1].gpus, 4);
  EXPECT_TRUE(cap.Take(0, 12, true).empty());  // 8 left: all or nothing
  EXPECT_EQ(cap.FreeGpus(0), 8);
}

TEST(FreeRoomTest, AMultiNodeGangTakesOnePartOnEachOfDistinctNodes) {
  model::Snapshot s;
  s.pools = {MakePool(1, "p", CapacityKind::kOnDemand)};
  s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8), MakeNode(3, 1, 8)};
  s.running = {MakeRunning(10, 10, 1, 4), MakeRunning(11, 11, 2, 6)};  // free: 4, 2, 8
  FreeRoom cap(s, PolicyConfig{});
  // 2 x 4: node 2 (2 free) cannot hold a part, so nodes 1 (the fullest that fits) and 3,
  // even though node 3 alone has room for both parts.
  EXPECT_TRUE(cap.CanHost(0, 8, false, 2));
  EXPECT_EQ(cap.Usable(0, 8, false, 2), 8);  // parts: 1 on node 1, 2 on node 3: one gang
  auto parts = cap.Take(0, 8, false, 2);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node, 1);
  EXPECT_EQ(parts[0].gpus, 4);
  EXPECT_EQ(parts[1].node, 3);
  EXPECT_EQ(parts[1].gpus, 4);
  // Free now: 0, 2, 4. A second 2 x 4 gang fits on no two nodes: nothing is taken.
  EXPECT_EQ(cap.Usable(0, 8, false, 2), 0);
  EXPECT_TRUE(cap.Take(0, 8, false, 2).empty());
  EXPECT_EQ(cap.FreeGpus(0), 6);
  // 2 x 2 still fits, on nodes 2 and 3.
  EXPECT_EQ(cap.Take(0, 4, false, 2).size(), 2u);
  // More nodes than the pool has can never be hosted.
  EXPECT_FALSE(cap.CanHost(0, 4, false, 4));
}

TEST(FreeRoomTest, AGangOnNewNodesNeedsAWholeNodePerPart) {
  model::Snapshot s;
  model::Pool p = MakePool(1, "p", CapacityKind::kOnDemand);
  p.elastic = true;
  p.node_gpus = 8;
  p.max_gpus = 32;
  s.pools = {p};
  FreeRoom cap(s, PolicyConfig{});
  EXPECT_EQ(cap.NewGpusFor(0, 8, 2), 16);  // 2 x 4 takes two 8-GPU nodes
  EXPECT_EQ(cap.NewGpusFor(0, 8, 1), 8);
  EXPECT_TRUE(cap.CanHost(0, 8, false, 2));
  EXPECT_FALSE(cap.CanHost(0, 40, false, 4));  // 4 x 10: no node holds a part
  EXPECT_FALSE(cap.CanHost(0, 40, false, 5));  // 5 x 8: 40 GPUs, over max_gpus
}

TEST(FreeRoomTest, MaxGpusCapsThePoolAndOddNodesGetTheirOwnEntry) {
  model::Snapshot s;
  s.pools = {MakePool(1, "p", CapacityKind::kOnDemand, "a100", 3.0, 1.0, 80, 10)};
  s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8, "l4", 24), MakeNode(3, 7, 4)};
  s.running = {MakeRunning(10, 10, 1, 6)};
  FreeRoom cap(s, PolicyConfig{});
  ASSERT_EQ(cap.size(), 3);       // the pool, its odd l4 node, unknown pool 7
  EXPECT_EQ(cap.FreeGpus(0), 2);  // 2 free on node 1 (the cap leaves 10 - 6)
  EXPECT_EQ(cap.FreeGpus(1), 4);  // 8 free, but it shares the cap: 10 - 6
  EXPECT_EQ(cap.entry(1).pool.gpu_type, "l4");
  EXPECT_EQ(cap.entry(2).pool.name, "pool-7");
  EXPECT_EQ(cap.FreeGpus(2), 4);
  ASSERT_EQ(cap.Take(1, 3, true).size(), 1u);
  EXPECT_EQ(cap.FreeGpus(0), 1);
}

TEST(FreeRoomTest, NodesUnderNoticeAndClosedNodesOfferNothing) {
  model::Snapshot s;
  s.pools = {MakePool(1, "p", CapacityKind::kSpot)};
  s.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8)};
  s.nodes[0].under_notice = true;
  FreeRoom cap(s, PolicyConfig{});
  EXPECT_EQ(cap.FreeGpus(0), 8);
  cap.Close(2);
  EXPECT_EQ(cap.FreeGpus(0), 0);
  EXPECT_TRUE(cap.NodeClosed(1));
}

TEST(FreeRoomTest, ElasticPoolsGrowUpToMaxGpus) {
  model::Snapshot s;
  s.pools = {MakePool(1, "p", CapacityKind::kOnDemand, "a100", 3.0, 1.0, 80, 24)};
  s.pools[0].elastic = true;
  s.nodes = {MakeNode(1, 1, 8)};
  FreeRoom cap(s, PolicyConfig{});
  EXPECT_EQ(cap.NewCapacity(0), 16);
  cap.UseNew(0, 10);
  EXPECT_EQ(cap.NewCapacity(0), 6);
}

TEST(FreeRoomTest, EtaIsTheEarliestExpectedEnd) {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(1, "p", CapacityKind::kReserved)};
  s.nodes = {MakeNode(1, 1, 8)};
  auto a = MakeRunning(10, 10, 1, 4);  // started 2h ago, 3h estimate: 1h left
  a.estimate = 3h;
  auto b = MakeRunning(11, 11, 1, 4);  // default 1h estimate: overdue, assume 10m
  s.running = {a};
  EXPECT_NEAR(FreeRoom(s, PolicyConfig{}).entry(0).eta_hours, 1.0, 1e-9);
  s.running = {a, b};
  EXPECT_NEAR(FreeRoom(s, PolicyConfig{}).entry(0).eta_hours, 10.0 / 60, 1e-9);
}

}  // namespace
}  // namespace frugal::policy
