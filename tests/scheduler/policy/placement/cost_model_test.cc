#include "scheduler/policy/placement/cost_model.h"

#include <gtest/gtest.h>

#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

Work TenHours(Tolerance t = Tolerance::kCheckpointed) {
  auto j = MakeJob(1, 2, 2, t);
  j.estimate = 10h;
  j.checkpoint_interval = 1h;
  return WorkOf(j, PolicyConfig{});
}

TEST(CostModelTest, OnDemandCostIsPriceTimesGpusTimesHoursOnThatSpeed) {
  // $3/GPU-hour, 2 GPUs, 10h of reference work at speed 2: 5h, $30.00.
  auto pool = MakePool(1, "h", CapacityKind::kOnDemand, "h100", 3.0, 2.0);
  Estimate e = EstimateOn(TenHours(), pool, 1, false);
  EXPECT_DOUBLE_EQ(e.wall_hours, 5.0);
  EXPECT_EQ(e.cost, 30'000'000);
  EXPECT_EQ(e.preemptions, 0);
}

TEST(CostModelTest, SpotAddsReworkFromHalfAnIntervalPlusRestorePerReclaim) {
  // 0.1 reclaims per node-hour, 10h run: per reclaim 30m + 5m; rework 0.1 x 10 x 35/60 h.
  auto pool = MakePool(1, "s", CapacityKind::kSpot, "a100", 1.0);
  pool.preemption_rate_per_node_hour = 0.1;
  Estimate e = EstimateOn(TenHours(), pool, 1, false);
  EXPECT_NEAR(e.rework_hours, 35.0 / 60, 1e-9);
  EXPECT_NEAR(e.wall_hours, 10 + 35.0 / 60, 1e-9);
  EXPECT_NEAR(e.preemptions, 0.1 * e.wall_hours, 1e-9);
  EXPECT_NEAR(e.loss_hours, 1 + 5.0 / 60, 1e-9);
  EXPECT_EQ(e.cost, 21'166'667);  // $1 x 2 GPUs x 10.5833h
  // A gang's nodes are reclaimed together (a zone out of capacity takes them all): a gang
  // on two nodes sees the same reclaims as one node, not twice as many.
  EXPECT_NEAR(EstimateOn(TenHours(), pool, 2, false).rework_hours, 35.0 / 60, 1e-9);
}

TEST(CostModelTest, RestartableJobsLoseHalfTheRunPerReclaim) {
  // 0.1 x 10h x 5h = 5h rework; a reclaim can lose all 10h.
  auto pool = MakePool(1, "s", CapacityKind::kSpot, "a100", 1.0);
  pool.preemption_rate_per_node_hour = 0.1;
  Estimate e = EstimateOn(TenHours(Tolerance::kRestartable), pool, 1, false);
  EXPECT_NEAR(e.rework_hours, 5.0, 1e-9);
  EXPECT_NEAR(e.loss_hours, 10.0, 1e-9);
}

TEST(CostModelTest, ResumingPaysOneRestoreAndRemainingWorkShrinksWithProgress) {
  auto j = MakeJob(1, 1, 2, Tolerance::kCheckpointed);
  j.estimate = 10h;
  j.progress = 0.75;
  Work w = WorkOf(j, PolicyConfig{});
  EXPECT_DOUBLE_EQ(w.ref_hours, 2.5);
  auto pool = MakePool(1, "o", CapacityKind::kOnDemand);
  EXPECT_NEAR(EstimateOn(w, pool, 1, false).run_hours, 2.5 + 5.0 / 60, 1e-9);
  j.progress = 7;  // bad data: clamped to done
  EXPECT_DOUBLE_EQ(WorkOf(j, PolicyConfig{}).ref_hours, 0);
}

TEST(CostModelTest, MissingEstimateUsesTheDefault) {
  Work w = WorkOf(MakeJob(1, 1), PolicyConfig{});
  EXPECT_FALSE(w.estimated);
  EXPECT_DOUBLE_EQ(w.ref_hours, 1.0);
}

TEST(CostModelTest, DecisionRateIsPerReferenceHourAndReservedIsNearlyFree) {
  PolicyConfig config;
  Work w = TenHours();
  auto l4 = MakePool(1, "l4", CapacityKind::kOnDemand, "l4", 0.8, 0.25);
  auto res = MakePool(2, "r", CapacityKind::kReserved, "a100", 2.0);
  EXPECT_NEAR(DecisionRate(w, l4, EstimateOn(w, l4, 1, false), config), 3.2e6, 1e-3);
  EXPECT_NEAR(DecisionRate(w, res, EstimateOn(w, res, 1, false), config), 2e3, 1e-6);
}

TEST(CostModelTest, DeadlineSlackIsLeftMinusSafeRunMinusMargin) {
  // 30h left, 10h on the fastest safe pool, margin max(10m, 2 x 5m restore) = 10m (no
  // longer 10% of the run: the spot risk is counted per reclaim): slack 19h50m.
  PolicyConfig config;
  DeadlineView v = ViewDeadline(At(30h), T0(), 10.0, config);
  EXPECT_TRUE(v.has_deadline);
  EXPECT_NEAR(v.slack_hours, 19.0 + 50.0 / 60, 1e-9);
  // A fraction of the run is still honoured when configured: max(10m, 1h) = 1h.
  config.deadline_margin_fraction = 0.1;
  EXPECT_NEAR(ViewDeadline(At(30h), T0(), 10.0, config).slack_hours, 19.0, 1e-9);
  config.deadline_margin_fraction = 0;
  // A 12m restore makes the margin 2 x 12m = 24m (the Safety Net's 2d).
  config.restore_time = 12min;
  EXPECT_NEAR(ViewDeadline(At(30h), T0(), 10.0, config).slack_hours, 20.0 - 0.4, 1e-9);
  // The learned controller's tables count each restore: it keeps the configured 10m only.
  EXPECT_NEAR(
      ViewDeadline(At(30h), T0(), 10.0, config, DeadlineGuard::kController).slack_hours,
      20.0 - 1.0 / 6, 1e-9);
  config.restore_time = 5min;
  EXPECT_FALSE(ViewDeadline(std::nullopt, T0(), 10.0, config).has_deadline);
  // 1h of work: the 10m floor applies. 1h30m left: slack 1h30m - 1h - 10m = 20m.
  EXPECT_NEAR(ViewDeadline(At(90min), T0(), 1.0, config).slack_hours, 1.0 / 3, 1e-9);
}

TEST(CostModelTest, SpotIsCoveredWhileSlackExceedsExtraTimePlusOneWorstReclaim) {
  auto pool = MakePool(1, "s", CapacityKind::kSpot);
  pool.preemption_rate_per_node_hour = 0.1;
  Estimate e = EstimateOn(TenHours(), pool, 1, false);  // run 10h, rework 35m, loss 1h5m
  PolicyConfig config;
  DeadlineView v = ViewDeadline(At(30h), T0(), 10.0, config);
  // The risk is what one reclaim takes before the guard reacts: 1h5m. Later reclaims are
  // guarded when they come; the expected rework (35m) is what waiting must leave in hand.
  EXPECT_NEAR(SpotRiskHours(e, v), 65.0 / 60, 1e-9);
  // Reserve: risk 1h5m + rework 35m + 1.06 expected reclaims x one 5m restore back.
  EXPECT_NEAR(SpotReserveHours(e, v, TenHours()), 65.0 / 60 + 35.0 / 60 + e.preemptions * 5.0 / 60,
              1e-9);
  EXPECT_TRUE(SpotCovered(e, v));
  // 11h15m left: slack 11h15m - 10h - 10m = 1h5m, just covers it; 11h10m does not.
  EXPECT_TRUE(SpotCovered(e, ViewDeadline(At(11h + 15min), T0(), 10.0, config)));
  EXPECT_FALSE(SpotCovered(e, ViewDeadline(At(11h + 10min), T0(), 10.0, config)));
}

TEST(CostModelTest, PoolFitAndTolerance) {
  auto l4 = MakePool(1, "l4", CapacityKind::kSpot, "l4", 0.8, 0.3, 24);
  EXPECT_TRUE(PoolFits({}, std::nullopt, l4));
  EXPECT_FALSE(PoolFits({"a100"}, std::nullopt, l4));
  EXPECT_FALSE(PoolFits({}, 40, l4));
  EXPECT_FALSE(MayRunOn(Tolerance::kNone, CapacityKind::kSpot));
  EXPECT_TRUE(MayRunOn(Tolerance::kNone, CapacityKind::kReserved));
  EXPECT_EQ(NodesSpanned(16, 8), 2);
  EXPECT_EQ(NodesSpanned(17, 8), 3);
  EXPECT_EQ(NodesSpanned(4, 0), 1);
}

}  // namespace
}  // namespace frugal::policy
