#include "scheduler/policy/placement/quote.h"

#include <gtest/gtest.h>

#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

// Reserved a100 $2, on-demand a100 $3, on-demand h100 $5 at speed 2 with a 10m start-up,
// spot a100 $1 at 0.1 reclaims per node-hour. A checkpointed 1-GPU job of 10h (interval 1h).
class QuoteTest : public ::testing::Test {
 protected:
  QuoteTest() {
    pools_ = {MakePool(1, "res", CapacityKind::kReserved, "a100", 2.0),
              MakePool(2, "od", CapacityKind::kOnDemand, "a100", 3.0),
              MakePool(3, "h100-od", CapacityKind::kOnDemand, "h100", 5.0, 2.0),
              MakePool(4, "spot", CapacityKind::kSpot, "a100", 1.0)};
    pools_[2].startup_delay = 10min;
    pools_[3].preemption_rate_per_node_hour = 0.1;
    job_ = MakeJob(1, 1, 2, Tolerance::kCheckpointed);
    job_.estimate = 10h;
    job_.checkpoint_interval = 1h;
  }
  const PoolQuote& Of(const Quote& q, model::PoolId id) {
    for (const auto& p : q.pools)
      if (p.pool_id == id) return p;
    throw std::runtime_error("no such pool");
  }
  std::vector<model::Pool> pools_;
  model::PendingJob job_;
};

TEST_F(QuoteTest, PricesEveryPoolAndRecommendsReservedFirst) {
  Quote q = QuoteJob(job_, pools_, T0());
  ASSERT_EQ(q.pools.size(), 4u);
  EXPECT_EQ(Of(q, 1).expected_cost, 20'000'000);  // $2 x 10h, already paid
  EXPECT_EQ(Of(q, 2).expected_cost, 30'000'000);  // $3 x 10h
  EXPECT_EQ(Of(q, 3).expected_cost, 25'000'000);  // $5 x 5h
  EXPECT_EQ(Of(q, 3).expected_wall, 5h + 10min);  // start-up + run
  // Spot: rework 0.1 x 10h x 35m = 35m; low: no reclaim ($10.00); high: 1.06 + 2 x sqrt(1.06)
  // = 3.12 reclaims x 1h05m = 3h22.5m extra, $13.38.
  const PoolQuote& spot = Of(q, 4);
  EXPECT_EQ(spot.expected_cost, 10'583'333);
  EXPECT_EQ(spot.low_cost, 10'000'000);
  EXPECT_NEAR(static_cast<double>(spot.high_cost), 13'375'500, 2'000);
  EXPECT_NEAR(spot.expected_preemptions, 1.058, 1e-3);
  EXPECT_EQ(q.recommended, 1);
  EXPECT_EQ(q.recommendation,
            "reserved res: already paid for vs $25.00 on-demand, capacity permitting");
  EXPECT_EQ(q.on_demand_pool, 3);
  EXPECT_EQ(q.earliest_pool, 3);
  EXPECT_EQ(q.earliest_finish, At(5h + 10min));
  EXPECT_TRUE(q.deadline_feasible);
}

TEST_F(QuoteTest, RefusesADeadlineThatEvenTheFastestSafePoolMisses) {
  job_.deadline = At(4h);
  Quote q = QuoteJob(job_, pools_, T0());
  EXPECT_FALSE(q.deadline_feasible);
  EXPECT_EQ(q.refusal,
            "deadline 2026-01-01T04:00:00Z cannot be met: the earliest feasible finish is "
            "2026-01-01T05:10:00Z on h100-od");
}

TEST_F(QuoteTest, ATightDeadlineLeavesOnlyTheFastPool) {
  // 6h: the h100 needs 5h10m (margin max(10m, 2 x 5m) = 10m: fits); a100 pools need 10h;
  // spot's risk (its run beyond the safe one, 10h - 5h10m, plus one reclaim 1h05m = 5h55m)
  // is far beyond the 6h - 5h10m - 10m = 40m of slack.
  job_.deadline = At(6h);
  Quote q = QuoteJob(job_, pools_, T0());
  EXPECT_TRUE(q.deadline_feasible);
  EXPECT_EQ(Of(q, 1).why_not, "finishes after the deadline");
  EXPECT_EQ(Of(q, 4).why_not, "slack 40m does not cover the spot risk of 5h55m");
  EXPECT_TRUE(Of(q, 3).allowed);
  EXPECT_EQ(q.recommended, 3);
}

TEST_F(QuoteTest, NoEstimateWidensTheRangeAndToleranceNoneExcludesSpot) {
  job_.estimate.reset();  // assume 1h: $3 on-demand, range $1.50 to $6.00
  job_.tolerance = Tolerance::kNone;
  Quote q = QuoteJob(job_, pools_, T0());
  EXPECT_EQ(Of(q, 2).expected_cost, 3'000'000);
  EXPECT_EQ(Of(q, 2).low_cost, 1'500'000);
  EXPECT_EQ(Of(q, 2).high_cost, 6'000'000);
  EXPECT_EQ(Of(q, 4).why_not, "tolerance none never runs on spot");
}

TEST_F(QuoteTest, NoSafePoolMeansNoDeadlineGuarantee) {
  job_.deadline = At(100h);
  Quote q = QuoteJob(job_, {pools_[3]}, T0());
  EXPECT_FALSE(q.deadline_feasible);
  EXPECT_NE(q.refusal.find("no reserved or on-demand pool can run this job"), std::string::npos);
}

// Issue 17: a quote names only pools whose nodes hold the job. The reserved pool's nodes
// have 2 GPUs: "$x on res" for a 4-GPU job was a quote nothing could honour.
TEST_F(QuoteTest, NamesOnlyPoolsWhoseNodesHoldTheJob) {
  PolicyConfig one_node;
  one_node.spread_large_jobs = false;  // as the scheduler runs today
  pools_[0].largest_node_gpus = 2;
  job_.gpus = 4;
  Quote q = QuoteJob(job_, pools_, T0(), one_node);
  EXPECT_FALSE(Of(q, 1).allowed);
  EXPECT_EQ(Of(q, 1).why_not, "nodes have 2 GPU(s)");
  ASSERT_TRUE(q.recommended.has_value());
  EXPECT_NE(*q.recommended, 1);
  EXPECT_TRUE(q.unplaceable.empty()) << "pools of unknown node size may still hold it";
  job_.gpus = 2;
  EXPECT_TRUE(Of(QuoteJob(job_, pools_, T0(), one_node), 1).allowed);
}

// Until gangs span nodes, a job that no node of any pool it may use can hold is refused
// at submit (422), with the largest node named; a provider's node size counts as known.
TEST_F(QuoteTest, NoNodeHoldsTheJobWhenEveryAllowedPoolsNodesAreTooSmall) {
  PolicyConfig one_node;
  one_node.spread_large_jobs = false;
  pools_[0].largest_node_gpus = 2;
  pools_[1].largest_node_gpus = 8;
  pools_[2].largest_node_gpus = 1;  // h100: not allowed for this a100 job anyway
  pools_[3].node_gpus = 4;          // spot nodes come from a provider, 4 GPUs each
  job_.gpu_types = {"a100"};
  job_.gpus = 16;
  Quote q = QuoteJob(job_, pools_, T0(), one_node);
  EXPECT_FALSE(q.recommended.has_value());
  EXPECT_NE(q.unplaceable.find("no node can hold 16 GPUs"), std::string::npos) << q.unplaceable;
  EXPECT_NE(q.unplaceable.find("8 GPUs (pool od)"), std::string::npos) << q.unplaceable;
  job_.gpus = 8;
  EXPECT_TRUE(QuoteJob(job_, pools_, T0(), one_node).unplaceable.empty());
  // With gangs across nodes (the simulator's setting) nothing is refused for size.
  job_.gpus = 16;
  PolicyConfig gangs;
  gangs.spread_large_jobs = true;
  EXPECT_TRUE(QuoteJob(job_, pools_, T0(), gangs).unplaceable.empty());
}

TEST(PendingFromSpecTest, CopiesWhatThePolicyNeeds) {
  model::JobSpec spec;
  spec.gpus = 4;
  spec.gpu_types = {"h100"};
  spec.priority = "high";
  spec.estimate = 2h;
  spec.tolerance = Tolerance::kCheckpointed;
  auto j = PendingFromSpec(spec, T0());
  EXPECT_EQ(j.gpus, 4);
  EXPECT_EQ(j.priority_rank, 1);
  EXPECT_EQ(j.estimate, 2h);
  EXPECT_EQ(j.created_at, T0());
}

}  // namespace
}  // namespace frugal::policy
