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

TEST(EngineTest, AFinalWriteThatFitsTheNoticeLosesOnlyTheWrite) {
  // Spot up 0-4, reclaimed at 5 with a 30-minute notice; the job's final write takes 20
  // minutes (1200 s) and its periodic checkpoints come every 10 steps (none yet). Launch 0,
  // run 1-4: 4 h of work; the notice's write saves 4 h - 1200 s = 13200 s (3 whole steps
  // as controllers see it). On-demand from 5: launch 5, run 6-8 reaches 24000 s >= the
  // 6 h (21600 s) of work: done at 9.
  Market m = HandMarket({"1111100000000"}, {1.0}, 3.0);
  m.zones[0].notice_seconds = 1800;
  JobShape job = Job(6, 12, 1, 10);
  job.final_checkpoint_seconds = 1200;
  Scripted s({0, 0, 0, 0, 0, kOnDemand, kOnDemand, kOnDemand, kOnDemand});
  RunResult r = RunJob(m, job, s);
  EXPECT_EQ(r.reclaims, 1);
  EXPECT_EQ(r.lost_seconds, 1200);
  EXPECT_EQ(r.lost_steps, 1);
  EXPECT_EQ(r.finish, 9);
  EXPECT_FALSE(r.missed);
}

TEST(EngineTest, AWriteLongerThanTheNoticeLosesTheWorkSinceTheLastCheckpoint) {
  // Same job with a 40-minute write (2400 s > 1800 s of notice), and the same without any
  // notice: the reclaim takes back the 4 unsaved steps. On-demand from 5: launch 5, run
  // 6-11: done at 12, on time.
  for (int notice : {1800, 0}) {
    Market m = HandMarket({"1111100000000"}, {1.0}, 3.0);
    m.zones[0].notice_seconds = notice;
    JobShape job = Job(6, 12, 1, 10);
    job.final_checkpoint_seconds = notice ? 2400 : 1200;
    Scripted s({0, 0, 0, 0, 0, kOnDemand, kOnDemand, kOnDemand, kOnDemand, kOnDemand, kOnDemand,
                kOnDemand});
    RunResult r = RunJob(m, job, s);
    SCOPED_TRACE(notice);
    EXPECT_EQ(r.lost_seconds, 4 * 3600);
    EXPECT_EQ(r.lost_steps, 4);
    EXPECT_EQ(r.finish, 12);
  }
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
  // Spot never up; C = 4, due 10, d = 1. The authors' net fires at the first t with
  // 10 - t <= 4 + 2, t = 4: launch 4, run 5-8, done at 9. Spot comes up at 7: R - C stays
  // 2 on on-demand, so the net holds it there.
  Market m = HandMarket({"0000000111111"}, {1.0}, 3.0);
  Greedy g;
  RunResult r = RunJob(m, Job(4, 10, 1, 1), g);
  EXPECT_FALSE(r.missed);
  EXPECT_EQ(r.finish, 9);
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

TEST(BaselineTest, OnSpotPastTheNetTheJobKeepsSpotUntilReclaimedButNotInItsChangeover) {
  // The authors' d-net: R <= C + d. C0 = 4, R0 = 10, d = 1; at t = 7 progress 1: C = 3,
  // R = 3. On spot past its changeover both baselines keep spot (until a reclaim); still
  // in its changeover they go to on-demand; idle, the 2d-net has already sent them there.
  Market m = HandMarket({"1111111111"}, {1.0}, 3.0);
  JobShape job = Job(4, 10, 1, 1);
  StepView v;
  v.market = &m;
  v.job = &job;
  v.t = 7, v.step = 7, v.progress = 1, v.where = 0;
  Greedy g;
  UniformProgress up;
  EXPECT_EQ(g.Decide(v), 0);
  EXPECT_EQ(up.Decide(v), 0);
  v.changeover_left = 1;
  EXPECT_EQ(g.Decide(v), kOnDemand);
  EXPECT_EQ(up.Decide(v), kOnDemand);
  v.changeover_left = 0, v.where = kIdle;
  EXPECT_EQ(g.Decide(v), kOnDemand);
  EXPECT_EQ(up.Decide(v), kOnDemand);
}

TEST(BaselineTest, UniformProgressCatchesUpOnDemandAndHoldsItThroughHysteresis) {
  // C0 = 4, R0 = 12: expected progress t / 3. Spot down 0-3, up from 4. d = 1.
  // t=0: ep 0, not behind: idle. t=1: progress 0 < 1/3: on-demand (launch 1, run 2-3,
  // progress 2 at t=4). t=4: spot is up but progress 2 <= ep(4 + 2) = 2: the hysteresis
  // holds on-demand (the authors' rc_cr_threshold), run 4; t=5: 3 > ep(7) = 2.33: leave
  // for spot (the move checkpoints): launch 5, run 6, done at 7. Four on-demand steps
  // ($12) and two spot steps ($2).
  Market m = HandMarket({"0000111111"}, {1.0}, 3.0);
  UniformProgress up;
  RunResult r = RunJob(m, Job(4, 12, 1, 1), up);
  EXPECT_FALSE(r.missed);
  EXPECT_EQ(r.finish, 7);
  EXPECT_EQ(r.od_steps, 4);
  EXPECT_EQ(r.spot_steps, 2);
  EXPECT_DOUBLE_EQ(r.cost, 14.0);
}

TEST(BaselineTest, UniformProgressSpotFirstLeavesOnDemandForSpotDespiteHysteresis) {
  // Same job: at t=4 the spot-first variant switches at once: launch 4, run 5-6, done at
  // 7. Three on-demand steps ($9) and three spot steps ($3).
  Market m = HandMarket({"0000111111"}, {1.0}, 3.0);
  UniformProgress up(UniformProgress::Hysteresis::kSpotFirst);
  RunResult r = RunJob(m, Job(4, 12, 1, 1), up);
  EXPECT_EQ(up.Name(), "uniform-progress-spot-first");
  EXPECT_FALSE(r.missed);
  EXPECT_EQ(r.finish, 7);
  EXPECT_EQ(r.od_steps, 3);
  EXPECT_EQ(r.spot_steps, 3);
  EXPECT_DOUBLE_EQ(r.cost, 12.0);
}

TEST(BaselineTest, UniformProgressLeavesOnDemandOnlyForSpotNeverForIdle) {
  // C0 = 4, R0 = 16: ep(t) = t / 4; d = 1. On on-demand at t = 4 with progress 2, well
  // ahead of ep(t + 2) = 1.5: with spot down both readings stay on on-demand (the old
  // reading went idle here and paid d again at the next catch-up); with spot up they leave
  // for spot. Behind the hysteresis (progress 1 at t = 3 <= ep(5) = 1.25) with spot up,
  // only the spot-first variant leaves.
  Market down = HandMarket({"00000000000000000000"}, {1.0}, 3.0);
  Market up_m = HandMarket({"11111111111111111111"}, {1.0}, 3.0);
  UniformProgress holds;
  UniformProgress first(UniformProgress::Hysteresis::kSpotFirst);
  JobShape job = Job(4, 16, 1, 1);
  StepView v;
  v.job = &job;
  v.where = kOnDemand;
  v.t = 4, v.step = 4, v.progress = 2;
  v.market = &down;
  EXPECT_EQ(holds.Decide(v), kOnDemand);
  EXPECT_EQ(first.Decide(v), kOnDemand);
  v.market = &up_m;
  EXPECT_EQ(holds.Decide(v), 0);
  EXPECT_EQ(first.Decide(v), 0);
  v.t = 3, v.step = 3, v.progress = 1;
  EXPECT_EQ(holds.Decide(v), kOnDemand);
  EXPECT_EQ(first.Decide(v), 0);
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
