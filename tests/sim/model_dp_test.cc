// The online reference (bench/sim/model_dp.h): the chain it fits from a zone's history, and
// the policy its dynamic program gives: never a miss, never below the omniscient optimum,
// and waiting or paying for on-demand as the chain says outages end.
#include "bench/sim/model_dp.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include "bench/sim/optimum.h"
#include "tests/sim/sim_test_util.h"

namespace frugal::sim {
namespace {

using testing::HandMarket;
using testing::Job;

std::string Repeat(const std::string& unit, int times) {
  std::string s;
  for (int i = 0; i < times; ++i) s += unit;
  return s;
}

double Probability(const SpotChain& c, int from, int to) {
  double p = 0;
  for (const auto& [s, pr] : c.next[from]) p += s == to ? pr : 0;
  return p;
}

TEST(ChainFitTest, OneBinGivesTheReclaimAndReturnRatesPerStep) {
  // Up spells of 5 steps, outages of 2: 1 reclaim per 5 up steps, 1 return per 2 down.
  Market m = HandMarket({Repeat("1111100", 200)}, {1}, 3);
  SpotChain c = FitChain(m.zones[0], 0, m.steps, 1, 0.3);
  ASSERT_EQ(c.up.size(), 2u);
  EXPECT_NEAR(Probability(c, 0, 1), 0.2, 0.005);  // up -> down
  EXPECT_NEAR(Probability(c, 1, 0), 0.5, 0.005);  // down -> up
  EXPECT_NEAR(Probability(c, 0, 0) + Probability(c, 0, 1), 1, 1e-12);
}

TEST(ChainFitTest, AgeBinsSeeThatUpSpellsEndAtAFixedAge) {
  // Every up spell lasts exactly 6 steps: no reclaim before age 5, always one at age 5.
  Market m = HandMarket({Repeat("1111110", 300)}, {1}, 3);
  SpotChain c = FitChain(m.zones[0], 0, m.steps, 8, 0.3);
  const int young = c.State(true, 1), old = c.State(true, 5);
  ASSERT_NE(young, old);
  const int down = c.State(false, 0);
  EXPECT_LT(Probability(c, young, down), 0.01);
  // The bin holding age 5 may hold other ages too; every spell that reaches age 5 ends.
  EXPECT_GT(Probability(c, old, down), 0.3);
}

TEST(ChainDpTest, RunsOnSpotAllTheWayWhenSpotNeverFails) {
  Market m = HandMarket({std::string(40, '1')}, {1}, 3);
  SpotChain c = FitChain(m.zones[0], 0, m.steps, 4, 1.0 / 3);
  JobShape job = Job(10, 20, 1, 2);
  ChainDpTable table(c, job.deadline, job.work, job.changeover, job.checkpoint);
  ChainDpController dp(table, c);
  RunResult r = RunJob(m, job, dp);
  EXPECT_FALSE(r.missed);
  EXPECT_EQ(r.od_steps, 0);
  EXPECT_DOUBLE_EQ(r.cost, OptimumCost(m, job));
}

// Runs `job` (submitted where `now` begins) with the chain fitted on the history before it.
RunResult RunAfter(const std::string& history, const std::string& now, double spot, double od,
                   int work, int deadline) {
  Market m = HandMarket({history + now}, {spot}, od);
  const int start = static_cast<int>(history.size());
  SpotChain c = FitChain(m.zones[0], 0, start, 8, spot / od);
  JobShape job = Job(work, deadline, 1, 2, start);
  ChainDpTable table(c, job.deadline, job.work, job.changeover, job.checkpoint);
  ChainDpController dp(table, c);
  RunResult r = RunJob(m, job, dp, /*record=*/true);
  EXPECT_FALSE(r.missed);
  EXPECT_GE(r.cost + 1e-9, OptimumCost(m, job));
  return r;
}

// Outages have always lasted 15 steps and this one just began; the slack (9 steps) is
// shorter. Idle first (free, and spot might be back), then on-demand for just what the
// slack cannot cover, then spot for the rest once it is back.
TEST(ChainDpTest, SpendsTheSlackThenCoversTheRestOfAKnownOutageOnDemand) {
  const std::string spell = std::string(30, '1') + std::string(15, '0');
  RunResult r = RunAfter(Repeat(spell, 15) + std::string(30, '1'),
                         std::string(15, '0') + std::string(40, '1'), 1, 3, 30, 40);
  EXPECT_EQ(r.timeline.front().where, kIdle);
  EXPECT_GT(r.od_steps, 0);
  EXPECT_GT(r.spot_steps, 0);
  EXPECT_EQ(r.reclaims, 0);
}

// Spot at 0.9 of on-demand: where it is reclaimed every third step, a stint loses its
// changeover and rework and on-demand is cheaper; where it lasts 30 steps it pays.
TEST(ChainDpTest, UsesSpotOnlyWhereItsUpSpellsLastLongEnoughToPay) {
  RunResult flaky = RunAfter(Repeat("1110", 100), Repeat("1110", 10), 0.9, 1, 12, 20);
  EXPECT_EQ(flaky.spot_steps, 0);
  const std::string steady_spell = std::string(30, '1') + "0";
  RunResult steady =
      RunAfter(Repeat(steady_spell, 12) + "111", std::string(40, '1'), 0.9, 1, 12, 20);
  EXPECT_EQ(steady.od_steps, 0);
}

// The table's expected cost against the engine: markets drawn from the chain itself (a
// memoryless one, so the chain is exactly the world), run by the table's actions. Catches
// any disagreement between the program's bookkeeping (changeover, checkpoint, rework) and
// the engine's rules.
TEST(ChainDpTest, ExpectedCostMatchesTheEngineOnMarketsDrawnFromTheChain) {
  const double q = 0.15, r = 0.3, p = 0.3;
  SpotChain c;
  c.up = {1, 0};
  c.bin_start = {0};
  c.spot_price = p;
  c.next = {{{1, q}, {0, 1 - q}}, {{0, r}, {1, 1 - r}}};
  JobShape job = Job(8, 16, 2, 3);
  ChainDpTable table(c, job.deadline, job.work, job.changeover, job.checkpoint);
  ChainDpController dp(table, c);
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(0, 1);
  const int n = 20000;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < n; ++i) {
    std::string up = "1";  // submitted while spot is up (chain state 0)
    while (up.size() < 40) up += u(rng) < (up.back() == '1' ? 1 - q : r) ? '1' : '0';
    Market m = HandMarket({up}, {p}, 1);
    RunResult run = RunJob(m, job, dp);
    ASSERT_FALSE(run.missed);
    sum += run.cost;
    sum2 += run.cost * run.cost;
  }
  const double mean = sum / n, se = std::sqrt((sum2 / n - mean * mean) / n);
  EXPECT_NEAR(mean, table.ExpectedCost(0), 4 * se + 1e-9);
  EXPECT_LT(table.ExpectedCost(0), job.work + job.changeover);  // spot pays here
}

// Up spells last exactly 6 steps. At age 5 the spell is about to end: a launch would pay
// its changeover for nothing, so the job waits for the next spell; at age 0 it takes spot.
// A memoryless model could not tell the two apart.
TEST(ChainDpTest, LaunchesOnSpotOnlyEarlyInAnUpSpell) {
  const std::string spell = "111111000";
  RunResult old_spell =
      RunAfter(Repeat(spell, 60) + "11111", "1000" + Repeat(spell, 5), 1, 3, 4, 30);
  EXPECT_EQ(old_spell.timeline.front().where, kIdle);
  RunResult new_spell = RunAfter(Repeat(spell, 60), Repeat(spell, 5), 1, 3, 4, 30);
  EXPECT_EQ(new_spell.timeline.front().where, 0);
  EXPECT_EQ(new_spell.reclaims, 0);
}

// A table for jobs of at most 10 steps of work, a changeover of 1 and a checkpoint every 2.
// More work: on-demand until what is left fits the table. Another changeover or checkpoint
// interval: on-demand all the way.
TEST(ChainDpTest, AJobTheTableWasNotSolvedForRunsOnDemand) {
  Market m = HandMarket({std::string(40, '1')}, {1}, 3);
  SpotChain c = FitChain(m.zones[0], 0, m.steps, 1, 1.0 / 3);
  ChainDpTable table(c, 20, 10, 1, 2);
  ChainDpController dp(table, c);
  RunResult longer = RunJob(m, Job(12, 20, 1, 2), dp, /*record=*/true);
  EXPECT_FALSE(longer.missed);
  EXPECT_EQ(longer.timeline.front().where, kOnDemand);
  EXPECT_GT(longer.spot_steps, 0);
  for (JobShape job : {Job(8, 20, 2, 2), Job(8, 20, 1, 3)}) {
    RunResult r = RunJob(m, job, dp);
    EXPECT_FALSE(r.missed);
    EXPECT_EQ(r.spot_steps, 0);
  }
}

TEST(ChainDpTest, NeverMissesAndNeverBeatsTheOptimumOnRandomMarkets) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 60; ++trial) {
    std::string up;
    bool state = true;
    std::bernoulli_distribution flip(0.15 + 0.1 * (trial % 4));
    for (int j = 0; j < 160; ++j) {
      if (flip(rng)) state = !state;
      up += state ? '1' : '0';
    }
    Market m = HandMarket({up}, {1}, 3);
    const int checkpoint = 1 + trial % 3, d = 1 + trial % 2;
    const int start = 100, work = 8 + trial % 7;
    JobShape job = Job(work, work + d + 3 + trial % 9, d, checkpoint, start);
    SpotChain c = FitChain(m.zones[0], 0, start, 1 + trial % 5, 1.0 / 3);
    ChainDpTable table(c, job.deadline, job.work, job.changeover, job.checkpoint);
    ChainDpController dp(table, c);
    RunResult r = RunJob(m, job, dp);
    EXPECT_FALSE(r.missed) << "trial " << trial;
    EXPECT_GE(r.cost + 1e-9, OptimumCost(m, job)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace frugal::sim
