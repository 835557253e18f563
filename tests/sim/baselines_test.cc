// The single-job engine's rules and the published baselines on tiny hand-made traces.
// Steps are one hour; R = time left, C = work left, d = changeover (all in steps).
#include "bench/sim/baselines.h"

#include <gtest/gtest.h>

#include "tests/sim/sim_test_util.h"

namespace frugal::sim {
namespace {

using testing::HandMarket;
using testing::Job;
using testing::Scripted;

TEST(EngineTest, AReclaimRollsBackToTheLastCheckpoint) {
  // Spot up for steps 0-4. Launch at 0 (d = 1), run 1-4: progress 4, checkpoints every 3
  // steps of running: saved at 3. Reclaimed at 5: back to 3, one step lost. Then
  // on-demand: launch at 5, run 6-7 to reach 5. Cost: 5 spot steps x $1 + 3 x $3 = $14.
  Market m = HandMarket({"11111000000"}, {1.0}, 3.0);
  Scripted s({0, 0, 0, 0, 0, kOnDemand, kOnDemand, kOnDemand});
  RunResult r = RunJob(m, Job(5, 10, 1, 3), s);
  EXPECT_EQ(r.reclaims, 1);
  EXPECT_EQ(r.lost_steps, 1);
  EXPECT_EQ(r.finish, 8);
  EXPECT_DOUBLE_EQ(r.cost, 14.0);
  EXPECT_FALSE(r.missed);
}

TEST(EngineTest, AVoluntaryMoveCheckpointsFirst) {
  // Spot up all along; launch at 0, run 1-2 (progress 2, no checkpoint yet with an
  // interval of 5), move to on-demand at 3: nothing is lost; launch 3, run 4-6.
  Market m = HandMarket({"1111111111"}, {1.0}, 3.0);
  Scripted s({0, 0, 0, kOnDemand, kOnDemand, kOnDemand, kOnDemand});
  RunResult r = RunJob(m, Job(5, 10, 1, 5), s);
  EXPECT_EQ(r.lost_steps, 0);
  EXPECT_EQ(r.finish, 7);
  EXPECT_DOUBLE_EQ(r.cost, 3 * 1.0 + 4 * 3.0);
}

TEST(EngineTest, PastTheDeadlineTheEngineFinishesOnOnDemandAndFlagsTheMiss) {
  Market m = HandMarket({"0000000000"}, {1.0}, 3.0);
  Scripted idle({});
  RunResult r = RunJob(m, Job(2, 4, 1, 1), idle);
  // Idle 0-3; at 4 (the deadline) on-demand: launch 4, run 5-6.
  EXPECT_TRUE(r.missed);
  EXPECT_EQ(r.finish, 7);
  EXPECT_DOUBLE_EQ(r.cost, 9.0);
}

TEST(BaselineTest, OnDemandOnlyCostsExactlyTheNormaliser) {
  Market m = HandMarket({"1010101010"}, {1.0}, 3.0);
  OnDemandOnly od;
  JobShape job = Job(4, 8, 2, 1);
  RunResult r = RunJob(m, job, od);
  EXPECT_DOUBLE_EQ(r.cost, OnDemandCost(m, job));  // (4 + 2) x $3 = $18
  EXPECT_DOUBLE_EQ(r.cost, 18.0);
}

TEST(BaselineTest, GreedyIdlesUntilTheSafetyNetThenStaysOnDemand) {
  // Spot never up; C = 4, due 10, d = 1. The net fires at the first t with
  // 10 - t < 4 + 2, t = 5: launch 5, run 6-9, done at 10. Spot comes up at 7: ignored.
  Market m = HandMarket({"0000000111111"}, {1.0}, 3.0);
  Greedy g;
  RunResult r = RunJob(m, Job(4, 10, 1, 1), g);
  EXPECT_FALSE(r.missed);
  EXPECT_EQ(r.finish, 10);
  EXPECT_EQ(r.od_steps, 5);
  EXPECT_EQ(r.spot_steps, 0);
  EXPECT_DOUBLE_EQ(r.cost, 15.0);
}

TEST(BaselineTest, GreedyStaysOnSpotUntilReclaimed) {
  // Spot up 0-3 and 5-9. Launch 0, run 1-3 (progress 3, saved 3 with checkpoint 1);
  // reclaimed at 4 (R = 16, C = 3: no net), idle at 4; spot again at 5: launch 5, run 6-8.
  Market m = HandMarket({"11110111111111111111"}, {1.0}, 3.0);
  Greedy g;
  RunResult r = RunJob(m, Job(6, 20, 1, 1), g);
  EXPECT_EQ(r.reclaims, 1);
  EXPECT_EQ(r.finish, 9);
  EXPECT_EQ(r.od_steps, 0);
  EXPECT_DOUBLE_EQ(r.cost, 8.0);  // 4 + 4 spot steps
}

TEST(BaselineTest, UniformProgressCatchesUpOnDemandAndReturnsToSpot) {
  // C0 = 4, R0 = 8: expected progress t / 2. Spot down 0-3, up from 4. d = 1.
  // t=0: ep 0, not behind: idle. t=1: progress 0 < 0.5: on-demand (launch 1, run 2-3,
  // progress 2 at t=4). t=4: spot up: switch (taking risks; the move checkpoints):
  // launch 4, run 5-6: done at 7. Cost: 3 on-demand steps ($9) + 3 spot steps ($3).
  Market m = HandMarket({"0000111111"}, {1.0}, 3.0);
  UniformProgress up;
  RunResult r = RunJob(m, Job(4, 8, 1, 1), up);
  EXPECT_FALSE(r.missed);
  EXPECT_EQ(r.finish, 7);
  EXPECT_EQ(r.od_steps, 3);
  EXPECT_EQ(r.spot_steps, 3);
  EXPECT_DOUBLE_EQ(r.cost, 12.0);
}

TEST(BaselineTest, UniformProgressHysteresisKeepsOnDemandUntilAheadOfTPlus2d) {
  // C0 = 4, R0 = 16: ep(t) = t / 4; spot never up; d = 1. t=1: 0 < 0.25 behind: on-demand
  // (launch 1, progress 1 at t=3). Stays while progress < ep(t + 2) = (t + 2) / 4:
  // t=3: 1 < 1.25 stay (progress 2 at t=4); t=4: 2 < 1.5? no: leave, idle.
  Market m = HandMarket({"00000000000000000000"}, {1.0}, 3.0);
  UniformProgress up;
  JobShape job = Job(4, 16, 1, 1);
  JobView v;
  v.market = &m;
  v.job = &job;
  v.where = kOnDemand;
  v.t = 3, v.progress = 1;
  EXPECT_EQ(up.Decide(v), kOnDemand);
  v.t = 4, v.progress = 2;
  EXPECT_EQ(up.Decide(v), kIdle);
}

TEST(BaselineTest, SkyPilotFailsOverToTheNextCheapestOtherZone) {
  // Zone 0 $1 up 0-2, zone 1 $2 up always, zone 2 $1.5 up from 3. C = 4, d = 1.
  // Launch in zone 0 (cheapest up). Reclaimed at 3: cheapest other up zone is zone 2
  // ($1.5): launch 3, run 4-5. Done at 6: zone 0 3 steps ($3) + zone 2 3 steps ($4.5).
  Market m = HandMarket({"1110000000", "1111111111", "0001111111"}, {1.0, 2.0, 1.5}, 3.0);
  SkyPilotFailover sky;
  RunResult r = RunJob(m, Job(4, 20, 1, 1), sky);
  EXPECT_EQ(r.reclaims, 1);
  EXPECT_EQ(r.finish, 6);
  EXPECT_DOUBLE_EQ(r.cost, 7.5);
}

}  // namespace
}  // namespace frugal::sim
