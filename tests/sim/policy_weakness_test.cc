// Decisions of placement/cost that cost money on the single-job deadline problem, found by
// the cost simulator (bench/results/report.md) and reduced to one snapshot each. Each states
// the cheaper decision; they were DISABLED until the rule of decision 0014 made them.
// One p3.2xlarge (1 V100): spot $0.918/h, on-demand $3.06/h; a 48 h checkpointed job with
// a checkpoint every 15 min; changeover (restore) 3 min.
#include <gtest/gtest.h>

#include "scheduler/policy/placement/cost_policy.h"
#include "tests/sim/sim_test_util.h"

namespace frugal::policy {
namespace {

using std::chrono::hours;
using std::chrono::minutes;

using sim::testing::SpotAndOnDemand;

const Timestamp kNow = Timestamp{} + hours(24 * 365 * 53);

model::PendingJob Job(int gpus, minutes deadline_in, double progress = 0) {
  model::PendingJob j;
  j.id = 1;
  j.team_id = 1;
  j.gpus = gpus;
  j.tolerance = model::Tolerance::kCheckpointed;
  j.deadline = kNow + deadline_in;
  j.created_at = kNow;
  j.estimate = hours(48);
  j.checkpoint_interval = minutes(15);
  j.progress = progress;
  return j;
}

CostPolicy Frugal() {
  PolicyConfig config;
  config.restore_time = minutes(3);
  config.spread_large_jobs = true;  // as the simulator runs trace jobs (single_runs.cc)
  return CostPolicy(config);
}

// What the policy said, for the failure message.
std::string Reasons(const model::Plan& plan) {
  std::string out;
  for (const auto& a : plan.assignments) out.append("assign ").append(a.reason).append("\n");
  for (const auto& x : plan.stops) out.append("stop ").append(x.reason).append("\n");
  for (const auto& w : plan.waits) out.append("wait ").append(w.reason).append("\n");
  return out;
}

bool OnPool(const model::Plan& plan, model::NodeId first, model::NodeId last) {
  for (const auto& a : plan.assignments)
    if (a.job_id == 1 && a.node_id >= first && a.node_id <= last) return true;
  return false;
}

// 1. Spot is down (its pool has no live node) and the deadline is 80 h away for 48 h of
// work: 32 h of slack. The job should wait for spot; today it goes to on-demand at once
// ("expected $146.88") and stayed there (see 2). Uniform Progress waits here. The pool is
// not elastic: its nodes come back by themselves. Reserve kept before waiting: expected
// rework 0.3/h x 48 h x (7.5 + 3 min) = 2.5 h plus one worst reclaim 18 min = 2.8 h < 31.8 h.
TEST(PolicyWeaknessTest, WaitsForSpotWhileTheSlackIsAmple) {
  model::Snapshot s = SpotAndOnDemand{.now = kNow, .spot_price = 918000, .od_price = 3060000,
                                      .spot_rate = 0.3, .spot_up = false}
                          .Build();
  s.pending = {Job(1, hours(80))};
  model::Plan plan = Frugal().Decide(s);
  EXPECT_FALSE(OnPool(plan, 100000, 100000)) << Reasons(plan);
}

// 2. The job runs on on-demand with 44 h of work left and 52 h to its deadline (it went
// there after a reclaim); spot is back. It should move to spot (a stop that checkpoints,
// then a placement on spot: StopKind::kMigrateToSpot). Slack 52 - (44 + 0.05) - 10 min =
// 7.8 h covers a reclaim (15 + 3 min); expected stint 1 / 0.3 = 3.3 h saves 3.3 x ($3.06 -
// $0.918) = $7.14 against $0.31 of changeovers and expected lost work.
TEST(PolicyWeaknessTest, ReturnsToSpotWhenItComesBackWithAmpleSlack) {
  model::Snapshot s =
      SpotAndOnDemand{.now = kNow, .spot_price = 918000, .od_price = 3060000, .spot_rate = 0.3}
          .Build();
  model::RunningAttempt a;
  a.attempt_id = 7;
  a.job_id = 1;
  a.node_id = 100000;
  a.gpus = 1;
  a.pool_id = 100;
  a.team_id = 1;
  a.started_at = kNow - hours(1);
  a.last_checkpoint_at = kNow - minutes(5);
  a.progress = 4.0 / 48;
  a.tolerance = model::Tolerance::kCheckpointed;
  a.deadline = kNow + hours(52);
  a.estimate = hours(48);
  a.checkpoint_interval = minutes(15);
  s.running = {a};
  model::Plan plan = Frugal().Decide(s);
  ASSERT_EQ(plan.stops.size(), 1u) << Reasons(plan);
  EXPECT_EQ(plan.stops[0].kind, model::StopKind::kMigrateToSpot);
}

// 3. C0/R0 = 0.9: 48 h of work, 53.3 h to the deadline, spot up with a low learned reclaim
// rate (0.065 per node-hour). The old margin of 10% of the safe run (4.8 h) left 0.5 h of
// slack, less than the old spot risk (51 min): on-demand for everything. Now the margin is
// max(10 min, 2 x 3 min) and the risk one reclaim (18 min): slack 5.2 h covers it. The deadline holds
// with spot (a reclaim costs at most 15 + 3 min and on-demand can still finish), and
// Uniform Progress saves 28% on these cells, the optimum 36%.
TEST(PolicyWeaknessTest, UsesSpotWhenTheSlackCoversAReclaimButNotTenPercent) {
  model::Snapshot s =
      SpotAndOnDemand{.now = kNow, .spot_price = 918000, .od_price = 3060000, .spot_rate = 0.065}
          .Build();
  s.pending = {Job(1, minutes(3200))};  // 53 h 20 min
  model::Plan plan = Frugal().Decide(s);
  EXPECT_TRUE(OnPool(plan, 2000, 2000)) << Reasons(plan);
}

// 4. A gang of 16 on a spot pool whose 16 nodes are always reclaimed together (a zone out
// of capacity): the store learns 0.7 notices per node-hour, i.e. 0.7 gang reclaims per
// hour. The policy multiplied the per-node rate by the 16 nodes (11 reclaims per hour), saw
// a risk of 4 days against 16 h of slack and ran on on-demand; Uniform Progress saves
// 75% on this series (gcp-h100 us-central1-a, C0/R0 = 0.7).
TEST(PolicyWeaknessTest, CountsAGangsSimultaneousReclaimsOnce) {
  model::Snapshot s = SpotAndOnDemand{.now = kNow, .nodes = 16, .spot_price = 2372400,
                                      .od_price = 10315700, .spot_rate = 0.715}
                          .Build();
  s.pending = {Job(16, minutes(4114))};  // 68.6 h
  model::Plan plan = Frugal().Decide(s);
  EXPECT_TRUE(OnPool(plan, 2000, 2015)) << Reasons(plan);
}

}  // namespace
}  // namespace frugal::policy
