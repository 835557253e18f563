// The omniscient optimum (bench/sim/optimum.h) against brute force: every schedule of
// targets run through the engine itself, on small hand-made and random markets.
#include "bench/sim/optimum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "tests/sim/sim_test_util.h"

namespace frugal::sim {
namespace {

using testing::HandMarket;
using testing::Job;
using testing::Scripted;

// Least cost over every sequence of targets (idle, on-demand, each zone) that finishes by
// the deadline, through the engine with the job's own loss rules. With a checkpoint every
// step (or a final write of no time inside the notice) a reclaim loses nothing, as for
// the optimum, and the two agree; any loss can only cost more.
double BruteForce(const Market& m, const JobShape& job) {
  const int choices = 2 + static_cast<int>(m.zones.size());
  const int T = job.deadline;
  double best = std::numeric_limits<double>::infinity();
  std::vector<int> seq(T, 0);
  long long total = 1;
  for (int i = 0; i < T; ++i) total *= choices;
  for (long long code = 0; code < total; ++code) {
    long long c = code;
    for (int i = 0; i < T; ++i, c /= choices) seq[i] = static_cast<int>(c % choices) - 2;
    Scripted s(seq);
    RunResult r = RunJob(m, job, s);
    if (!r.missed) best = std::min(best, r.cost);
  }
  return best;
}

TEST(OptimumTest, UsesSpotWhileItLastsThenTheCheapestCover) {
  // Spot $1 up in steps 0-2, on-demand $3; 4 steps of work, d = 1, due in 6.
  // Best: spot launch at 0 (1) + run 1-2 (2) = $3 for 2 steps of work; the other 2 on
  // on-demand: launch (3) + 2 steps (6) = $9. Total $12. All on-demand: 5 x 3 = $15.
  Market m = HandMarket({"111000"}, {1.0}, 3.0);
  JobShape job = Job(4, 6, 1, 1);
  EXPECT_DOUBLE_EQ(OptimumCost(m, job), 12.0);
  EXPECT_DOUBLE_EQ(BruteForce(m, job), 12.0);
}

TEST(OptimumTest, WaitsForSpotWhenTheDeadlineAllows) {
  // Spot down for 3 steps then up: launch at 3 (1) + 3 steps (3) = $4, finishing at 7 = due.
  Market m = HandMarket({"0001111"}, {1.0}, 3.0);
  EXPECT_DOUBLE_EQ(OptimumCost(m, Job(3, 7, 1, 1)), 4.0);
}

TEST(OptimumTest, InfeasibleWhenWorkPlusChangeoverExceedsTheDeadline) {
  Market m = HandMarket({"1111"}, {1.0}, 3.0);
  EXPECT_TRUE(std::isinf(OptimumCost(m, Job(4, 4, 1, 1))));
}

TEST(OptimumTest, MovesBetweenZonesAtTheChangeover) {
  // Zone 0 ($1) up 0-2, zone 1 ($2) up 3-6; 5 steps of work, d = 1, due in 7.
  // Zone 0: launch + 2 steps = $3; zone 1: launch + 3 steps = 4 x $2 = $8: $11 for 5 steps
  // of work in exactly 7 steps. On-demand anywhere instead costs $3 a step: dearer.
  Market m = HandMarket({"1110000", "0001111"}, {1.0, 2.0}, 3.0);
  JobShape job = Job(5, 7, 1, 1);
  EXPECT_DOUBLE_EQ(OptimumCost(m, job), 11.0);
  EXPECT_DOUBLE_EQ(BruteForce(m, job), 11.0);
}

TEST(OptimumTest, EqualsBruteForceOnRandomSmallMarkets) {
  std::mt19937 rng(6);
  for (int trial = 0; trial < 60; ++trial) {
    int zones = 1 + trial % 2;
    int T = zones == 1 ? 8 : 7;
    std::vector<std::string> up(zones);
    std::vector<double> spot(zones);
    for (int z = 0; z < zones; ++z) {
      for (int j = 0; j < T + 2; ++j) up[z] += rng() % 3 ? '1' : '0';
      spot[z] = 0.5 + (rng() % 20) / 10.0;
    }
    Market m = HandMarket(up, spot, 3.0);
    int d = 1 + static_cast<int>(rng() % 2);
    int work = 1 + static_cast<int>(rng() % (T - d));
    JobShape job = Job(work, T, d, 1);
    double brute = BruteForce(m, job), dp = OptimumCost(m, job);
    SCOPED_TRACE(trial);
    if (std::isinf(brute)) {
      EXPECT_TRUE(std::isinf(dp));
    } else {
      EXPECT_NEAR(dp, brute, 1e-9);
    }
  }
}

TEST(OptimumTest, IsTheEnginesLeastCostInEveryLossSettingItCoversAndALowerBoundOtherwise) {
  // One-hour steps; a notice of 30 minutes on every zone. Per random market: brute force
  // with (a) a checkpoint every step, (b) a 0-s final write on notice (nothing lost),
  // (c) a 20-minute final write on notice, (d) no notice and a checkpoint every 2 steps.
  // (a) = (b) = the optimum <= (c) <= (d): each setting loses at least what the one before
  // does, and the optimum is the engine's own arithmetic without loss.
  std::mt19937 rng(14);
  for (int trial = 0; trial < 30; ++trial) {
    const int T = 8;
    std::string up;
    for (int j = 0; j < T + 2; ++j) up += rng() % 3 ? '1' : '0';
    Market m = HandMarket({up}, {0.5 + (rng() % 20) / 10.0}, 3.0);
    m.zones[0].notice_seconds = 1800;
    const int d = 1 + static_cast<int>(rng() % 2);
    const int work = 1 + static_cast<int>(rng() % (T - d));
    JobShape loss_free = Job(work, T, d, 1);
    JobShape instant = Job(work, T, d, 2), write = Job(work, T, d, 2);
    instant.final_checkpoint_seconds = 0;
    write.final_checkpoint_seconds = 1200;
    const double dp = OptimumCost(m, loss_free);
    const double a = BruteForce(m, loss_free), b = BruteForce(m, instant), c = BruteForce(m, write);
    m.zones[0].notice_seconds = 0;
    const double no_notice = BruteForce(m, write);
    SCOPED_TRACE(trial);
    if (std::isinf(dp)) {
      EXPECT_TRUE(std::isinf(a));
      continue;
    }
    EXPECT_NEAR(a, dp, 1e-9);
    EXPECT_NEAR(b, dp, 1e-9);
    EXPECT_GE(c, dp - 1e-9);
    EXPECT_GE(no_notice, c - 1e-9);
  }
}

}  // namespace
}  // namespace frugal::sim
