#include "scheduler/policy/placement/priority.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;

TEST(PriorityTest, FactorsArePureAndBounded) {
  EXPECT_DOUBLE_EQ(AgeFactor(6, 24h), 0.25);
  EXPECT_DOUBLE_EQ(AgeFactor(48, 24h), 1.0);
  EXPECT_DOUBLE_EQ(DecayedUsage(100, 7 * 24, 7 * 24h), 50);  // one half-life
  EXPECT_DOUBLE_EQ(FairShareFactor(0.5, 0.5), 0.5);          // used its share: 2^-1
  EXPECT_DOUBLE_EQ(FairShareFactor(0, 0.5), 1.0);
  EXPECT_DOUBLE_EQ(SizeFactor(1, 1), 0);
  EXPECT_DOUBLE_EQ(SizeFactor(15, 15), 1);
  EXPECT_DOUBLE_EQ(SizeFactor(3, 15), 0.5);  // log2(4) / log2(16)
  DeadlineView v;
  v.has_deadline = true;
  v.slack_hours = 6;
  EXPECT_DOUBLE_EQ(UrgencyFactor(v, 24h), 0.75);
  v.slack_hours = -1;
  EXPECT_DOUBLE_EQ(UrgencyFactor(v, 24h), 1.0);
  EXPECT_DOUBLE_EQ(UrgencyFactor(DeadlineView{}, 24h), 0.0);
}

TEST(PriorityTest, ScoreIsTheWeightedMeanAndExplainsItself) {
  PriorityFactors f{0.5, 0.8, 0, 0.25, 0};
  FactorWeights w;  // 1, 1, 2, 0.5
  f.score = WeightedScore(f, w);
  EXPECT_DOUBLE_EQ(f.score, (0.5 + 0.8 + 0.125) / 4.5);
  EXPECT_EQ(ExplainPriority(f, w),
            "score 0.32 = (age 0.50x1 + fair_share 0.80x1 + urgency 0.00x2 + size 0.25x0.5) / "
            "4.5");
}

TEST(PriorityTest, FairShareUsesDecayedUsageAgainstShares) {
  // Team 1 used 100 GPU-h a half-life ago (50 now), team 2 used 50 just now: equal usage.
  // Team 2 has twice the share: factors 2^-(0.5/(1/3)) and 2^-(0.5/(2/3)).
  model::Snapshot s;
  s.now = T0();
  s.team_usage[1] = {100, At(-7 * 24h)};
  s.team_usage[2] = {50, T0()};
  s.team_shares[2] = 2.0;
  FairShare fs(s, PolicyConfig{});
  EXPECT_NEAR(fs.Factor(1), std::exp2(-1.5), 1e-12);
  EXPECT_NEAR(fs.Factor(2), std::exp2(-0.75), 1e-12);
  EXPECT_DOUBLE_EQ(fs.Factor(99), 1.0);
}

TEST(PriorityTest, PreemptabilityRules) {
  PolicyConfig config;
  auto r = MakeRunning(1, 1, 1, 4);
  EXPECT_FALSE(WhyNotPreemptable(r, T0(), config).has_value());
  r.started_at = At(-5min);
  EXPECT_EQ(*WhyNotPreemptable(r, T0(), config), "has not run the minimum run time yet");
  r.started_at = At(-2h);
  r.last_priority_preemption_at = At(-3h);
  EXPECT_EQ(*WhyNotPreemptable(r, T0(), config),
            "preempted by priority before and no checkpoint since");
  r.last_checkpoint_at = At(-1h);  // progress since that preemption
  EXPECT_FALSE(WhyNotPreemptable(r, T0(), config).has_value());
  r.stopping = true;
  EXPECT_TRUE(WhyNotPreemptable(r, T0(), config).has_value());
  r.stopping = false;
  r.tolerance = model::Tolerance::kNone;
  EXPECT_TRUE(WhyNotPreemptable(r, T0(), config).has_value());
}

TEST(PriorityTest, VictimCostIsWorkSinceTheCheckpointPlusRestore) {
  PolicyConfig config;
  auto r = MakeRunning(1, 1, 1, 4);  // started 2h ago
  r.tolerance = model::Tolerance::kCheckpointed;
  r.last_checkpoint_at = At(-30min);
  VictimCost c = CostToPreempt(r, T0(), config);
  EXPECT_DOUBLE_EQ(c.lost_gpu_hours, 2.0);              // 4 GPUs x 30m
  EXPECT_DOUBLE_EQ(c.restart_gpu_hours, 4.0 * 5 / 60);  // 4 GPUs x 5m
  r.tolerance = model::Tolerance::kRestartable;         // everything since its start
  EXPECT_DOUBLE_EQ(CostToPreempt(r, T0(), config).lost_gpu_hours, 8.0);
}

TEST(PriorityTest, ClassNames) {
  PolicyConfig config;
  EXPECT_EQ(ClassName(0, config), "critical");
  EXPECT_EQ(ClassName(9, config), "rank 9");
}

}  // namespace
}  // namespace frugal::policy
