// Scenarios for placement/cost, each with the arithmetic that decides it. Defaults used
// below: restore 5m, deadline margin max(10m, 2 x restore) = 10m, reserved weight 0.001,
// patience without a deadline 1h, min run time 10m.
#include "scheduler/policy/placement/cost_policy.h"

#include <gtest/gtest.h>

#include "tests/scheduler/policy/placement/cost_policy_fixture.h"
#include "scheduler/policy/placement/fifo_policy.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

TEST_F(CostPolicyTest, PrefersReservedWhenIdle) {
  // Reserved is already paid: marginal $2 x 0.001 per GPU-hour beats spot (~$1.03) and
  // on-demand ($3). On-demand would have cost $3 x 1 GPU x 2h = $6.00.
  ThreePools();
  auto job = MakeJob(1, 1);
  job.estimate = 2h;
  s_.pending = {job};
  auto plan = Decide();
  ASSERT_EQ(NodeOf(plan, 1), 10);
  const auto& a = plan.assignments[0];
  EXPECT_NE(a.reason.find("reserved a100-reserved on node-10"), std::string::npos) << a.reason;
  EXPECT_NE(a.reason.find("already paid (on-demand a100-od would cost $6.00)"), std::string::npos)
      << a.reason;
  EXPECT_EQ(a.expected_cost, 4'000'000);  // the ledger still charges $2 x 1 x 2h = $4.00
}

TEST_F(CostPolicyTest, PicksTheCheapestGpuTypeThatFitsCountingSpeed) {
  // Per reference hour: l4 $0.80 / 0.25 = $3.20, a100 $3.00 / 1 = $3.00, h100 $5.00 / 2.5 = $2.00.
  s_.pools = {MakePool(1, "l4-od", CapacityKind::kOnDemand, "l4", 0.8, 0.25, 24),
              MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0, 1.0, 80),
              MakePool(3, "h100-od", CapacityKind::kOnDemand, "h100", 5.0, 2.5, 80)};
  s_.nodes = {MakeNode(11, 1, 8, "l4", 24), MakeNode(12, 2, 8, "a100", 80),
              MakeNode(13, 3, 8, "h100", 80)};
  auto any = MakeJob(1, 1);
  any.estimate = 10h;  // h100: 4h x $5 = $20.00
  auto no_h100 = MakeJob(2, 1);
  no_h100.gpu_types = {"l4", "a100"};  // a100 $30.00 beats l4 40h x $0.80 = $32.00
  auto small = MakeJob(3, 1);
  small.gpu_types = {"l4"};
  s_.pending = {any, no_h100, small};
  auto plan = Decide();
  EXPECT_EQ(NodeOf(plan, 1), 13);
  EXPECT_EQ(NodeOf(plan, 2), 12);
  EXPECT_EQ(NodeOf(plan, 3), 11);
  EXPECT_NE(AssignmentsOf(plan, 1)[0].reason.find("expected $20.00 for 4h"), std::string::npos)
      << AssignmentsOf(plan, 1)[0].reason;
}

// A checkpointed 10h job (interval 1h) on on-demand $3/h or spot $1/h at 0.1 reclaims per
// node-hour. Safe run 10h, margin 10m. On spot: loss per reclaim 1h/2 + 5m = 35m, rework
// 0.1 x 10h x 35m = 35m, wall 10h35m, expected 1.06 reclaims. The risk is one worst reclaim,
// 1h5m (decision 0014: later reclaims are guarded when they come; the old risk, 1h40m,
// also counted the expected rework of the whole run).
class SlackTest : public CostPolicyTest {
 protected:
  void SetUp() override {
    s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0),
                MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0)};
    s_.pools[1].preemption_rate_per_node_hour = 0.1;
    s_.nodes = {MakeNode(20, 2, 8), MakeNode(30, 3, 8)};
  }
  model::PendingJob Job(model::JobId id, Seconds deadline_in) {
    auto j = MakeJob(id, 1, 2, Tolerance::kCheckpointed);
    j.estimate = 10h;
    j.checkpoint_interval = 1h;
    j.deadline = At(deadline_in);
    return j;
  }
};

TEST_F(SlackTest, UsesSpotWhileSlackCoversTheRisk) {
  // Deadline in 30h: slack 30h - 10h - 10m = 19h50m >= 1h5m. Spot: $1 x 10.58h = $10.58.
  s_.pending = {Job(1, 30h)};
  auto plan = Decide();
  ASSERT_EQ(NodeOf(plan, 1), 30);
  const std::string& r = plan.assignments[0].reason;
  EXPECT_NE(r.find("spot a100-spot on node-30, 1 GPU(s): expected $10.58"), std::string::npos) << r;
  EXPECT_NE(r.find("vs $30.00 on-demand"), std::string::npos) << r;
  EXPECT_NE(r.find("1.1 expected preemption(s) add 35m"), std::string::npos) << r;
  EXPECT_NE(r.find("slack 20h covers the risk of 1h5m"), std::string::npos) << r;
}

TEST_F(SlackTest, UsesOnDemandWhenSlackIsShort) {
  // Deadline in 11h: slack 11h - 10h - 10m = 50m < 1h5m: on-demand, $3 x 10h = $30.00.
  s_.pending = {Job(1, 11h)};
  auto plan = Decide();
  ASSERT_EQ(NodeOf(plan, 1), 20);
  const std::string& r = plan.assignments[0].reason;
  EXPECT_NE(r.find("expected $30.00 for 10h"), std::string::npos) << r;
  EXPECT_NE(r.find("slack 50m does not cover the risk of 1h5m on spot a100-spot"),
            std::string::npos)
      << r;
}

TEST_F(SlackTest, NeverPutsToleranceNoneOnSpot) {
  auto j = MakeJob(1, 1, 2, Tolerance::kNone);
  s_.pending = {j};
  auto plan = Decide();
  ASSERT_EQ(NodeOf(plan, 1), 20);
  EXPECT_NE(plan.assignments[0].reason.find("tolerance none never runs on spot"),
            std::string::npos);
}

TEST_F(CostPolicyTest, DependencyWaitsAndCancelsAsFifoDoes) {
  ThreePools();
  auto blocked = MakeJob(1, 1), doomed = MakeJob(2, 1);
  blocked.waiting_for = {7, 8};
  doomed.failed_dependency = 9;
  s_.pending = {blocked, doomed};
  auto plan = Decide();
  auto fifo = FifoPolicy().Decide(s_);
  ASSERT_EQ(plan.waits.size(), 1u);
  EXPECT_EQ(plan.waits[0].reason, fifo.waits[0].reason);
  ASSERT_EQ(plan.holds.size(), 1u);
  EXPECT_EQ(plan.holds[0].reason, fifo.holds[0].reason);
}

TEST_F(CostPolicyTest, GangSpansNodesOfOnePoolOnlyAndAllOrNothing) {
  // Pool 1 has two 8-GPU nodes, pool 2 one: a 16-GPU gang of two nodes takes both nodes of
  // pool 1.
  s_.pools = {MakePool(1, "a", CapacityKind::kOnDemand), MakePool(2, "b", CapacityKind::kOnDemand)};
  s_.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8), MakeNode(3, 2, 8)};
  s_.pending = {MakeJob(1, 16)};
  s_.pending[0].nodes = 2;
  auto plan = Decide();
  auto parts = AssignmentsOf(plan, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node_id + parts[1].node_id, 3);
  // With 4 GPUs busy on node 1, pool 1 has 12 free and pool 2 has 8: 20 >= 16 in total, but
  // no pool holds the whole gang, so nothing starts.
  s_.running = {MakeRunning(100, 50, 1, 4)};
  plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
}

TEST_F(CostPolicyTest, WithoutMultiNodeGangsABigGangSaysItNeedsOneNode) {
  // As the scheduler runs it (an attempt is on one node): 16 GPUs never fit 8-GPU nodes.
  s_.pools = {MakePool(1, "a", CapacityKind::kOnDemand)};
  s_.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8)};
  s_.pending = {MakeJob(1, 16)};
  EXPECT_EQ(WaitReason(Decide(), 1),
            "waiting: no pool of an allowed type can hold 16 GPU(s) on one node");
}

TEST_F(CostPolicyTest, BinPackingKeepsWholeNodesFree) {
  // Node 1 has 4 of 8 GPUs busy, node 2 is empty: a 4-GPU job fills node 1, keeping node 2
  // whole for the 8-GPU job.
  s_.pools = {MakePool(1, "a", CapacityKind::kOnDemand)};
  s_.nodes = {MakeNode(1, 1, 8), MakeNode(2, 1, 8)};
  s_.running = {MakeRunning(100, 50, 1, 4)};
  s_.pending = {MakeJob(1, 4), MakeJob(2, 8)};
  auto plan = Decide();
  EXPECT_EQ(NodeOf(plan, 1), 1);
  EXPECT_EQ(NodeOf(plan, 2), 2);
}

TEST_F(CostPolicyTest, FlowGivesReservedToTheJobsWithTheDearestAlternative) {
  // 8 reserved, 8 spot, 8 on-demand GPUs; 8 tolerant jobs (older: higher score) and 8
  // tolerance-none jobs. Greedy by score would give reserved to the tolerant ones and
  // on-demand ($3 x 8) to the others. The flow puts tolerance none on reserved (8 x $0.002)
  // and the tolerant on spot (8 x $1.025), about $8.22 per hour instead of $24.02.
  ThreePools();
  for (int i = 1; i <= 8; ++i) {
    auto t = MakeJob(i, 1);
    t.created_at = At(-3h);
    auto n = MakeJob(10 + i, 1, 2, Tolerance::kNone);
    s_.pending.push_back(t);
    s_.pending.push_back(n);
  }
  auto plan = Decide();
  for (int i = 1; i <= 8; ++i) {
    EXPECT_EQ(NodeOf(plan, 10 + i), 10) << "job " << 10 + i;
    EXPECT_EQ(NodeOf(plan, i), 30) << "job " << i;
  }
}

TEST_F(CostPolicyTest, ALateJobRunsOnTheFastestSafeCapacity) {
  // 10h of work, deadline in 5h: a100 on-demand needs 10h, h100 on-demand 5h (speed 2).
  // Neither meets deadline minus margin: run where it finishes first and say so.
  s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0),
              MakePool(4, "h100-od", CapacityKind::kOnDemand, "h100", 5.0, 2.0),
              MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0)};
  s_.nodes = {MakeNode(20, 2, 8), MakeNode(40, 4, 8, "h100"), MakeNode(30, 3, 8)};
  auto j = MakeJob(1, 1);
  j.estimate = 10h;
  j.deadline = At(5h);
  s_.pending = {j};
  auto plan = Decide();
  ASSERT_EQ(NodeOf(plan, 1), 40);
  EXPECT_NE(plan.assignments[0].reason.find("deadline cannot be met: finishes in ~5h with 5h left"),
            std::string::npos)
      << plan.assignments[0].reason;
}

TEST_F(CostPolicyTest, ADeadlineNoSafePoolCanGuardIsBestEffortOnSpot) {
  // Only spot capacity: the deadline cannot be guarded (and submit refuses such deadlines),
  // so a tolerant job still runs rather than wait for safe capacity that does not exist.
  s_.pools = {MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0)};
  s_.nodes = {MakeNode(30, 3, 8)};
  auto j = MakeJob(1, 1);
  j.deadline = At(2h);
  s_.pending = {j};
  EXPECT_EQ(NodeOf(Decide(), 1), 30);
}

TEST_F(CostPolicyTest, NothingLandsOnANodeUnderNotice) {
  ThreePools();
  s_.nodes = {MakeNode(20, 2, 8), MakeNode(30, 3, 8)};
  s_.nodes[1].under_notice = true;
  s_.pending = {MakeJob(1, 1)};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

TEST_F(CostPolicyTest, HigherClassFirstAndFairShareWithinAClass) {
  // One free GPU per test. (a) A critical job beats an older normal one. (b) Within a class,
  // team 2 (no usage) goes before team 1 (all the usage): fair share 1.0 vs 2^-2 = 0.25.
  s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand)};
  s_.nodes = {MakeNode(20, 2, 1)};
  s_.pending = {MakeJob(1, 1), MakeJob(2, 1, 0)};
  EXPECT_EQ(NodeOf(Decide(), 2), 20);
  auto heavy = MakeJob(3, 1), light = MakeJob(4, 1);
  light.team_id = 2;
  s_.pending = {heavy, light};
  s_.team_usage[1] = {500.0, T0()};
  auto plan = Decide();
  EXPECT_EQ(NodeOf(plan, 4), 20);
  auto factors = PriorityOf(s_, 3);
  ASSERT_TRUE(factors.has_value());
  EXPECT_DOUBLE_EQ(factors->fair_share, 0.25);
}

TEST_F(CostPolicyTest, AsksAnElasticPoolForNodesAndCountsRequestsInFlight) {
  // No live node; the on-demand pool can grow to 16 GPUs in 5m.
  s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0, 1.0, 80, 16)};
  s_.pools[0].elastic = true;
  s_.pools[0].startup_delay = 5min;
  auto j = MakeJob(1, 4);
  j.estimate = 1h;
  s_.pending = {j};
  auto plan = Decide();
  ASSERT_EQ(plan.node_requests.size(), 1u);
  EXPECT_EQ(plan.node_requests[0].pool_id, 2);
  EXPECT_EQ(plan.node_requests[0].gpus, 4);
  EXPECT_EQ(WaitReason(plan, 1),
            "waiting for a new node in on-demand a100-od (requested, ready in ~5m): expected "
            "$12.00 for 1h");
  s_.pools[0].requested_gpus = 4;  // already asked last cycle
  EXPECT_TRUE(Decide().node_requests.empty());
}

TEST_F(CostPolicyTest, AGangWaitingForNewNodesHoldsTheFirstOneFromSmallerJobs) {
  // An elastic on-demand pool of 8-GPU nodes: a 2 x 8 gang asked for two nodes last cycle;
  // one has registered (node 20, idle), the other is still starting (8 GPUs in flight). A
  // 1-GPU job of the same priority arrives. The gang holds node 20 and asks for nothing
  // more; the small job does not take node 20 and asks for a node of its own.
  s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0, 1.0, 80, 64)};
  s_.pools[0].elastic = true;
  s_.pools[0].node_gpus = 8;
  s_.pools[0].startup_delay = 5min;
  s_.pools[0].idle_timeout = 5min;
  s_.pools[0].requested_gpus = 8;
  s_.nodes = {MakeNode(20, 2, 8)};
  s_.nodes[0].idle_since = At(-10min);  // past the timeout: only the hold keeps it
  auto gang = MakeJob(1, 16);
  gang.nodes = 2;
  gang.estimate = 1h;
  auto small = MakeJob(2, 1);
  small.estimate = 1h;
  s_.pending = {gang, small};
  auto plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  EXPECT_TRUE(AssignmentsOf(plan, 2).empty());
  EXPECT_TRUE(plan.node_releases.empty());
  ASSERT_EQ(plan.node_requests.size(), 1u);
  // The small job's GPU (the provider rounds it up to a node): the gang's missing node is
  // the one in flight. Without the hold the gang asked for two more nodes (16 - 8).
  EXPECT_EQ(plan.node_requests[0].gpus, 1);
  EXPECT_EQ(plan.node_requests[0].job_ids, std::vector<model::JobId>({1, 2}));
  EXPECT_NE(WaitReason(plan, 1).find("holding 1 live node(s) for its other parts"),
            std::string::npos)
      << WaitReason(plan, 1);

  // The same where the pool is capped at the gang's size (16 GPUs: 8 live, 8 starting):
  // the gang still holds node 20; the small job finds no room at all.
  s_.pools[0].max_gpus = 16;
  plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 2).empty());
  EXPECT_TRUE(plan.node_releases.empty());
  EXPECT_NE(WaitReason(plan, 1).find("holding 1 live node(s)"), std::string::npos)
      << WaitReason(plan, 1);
  s_.pools[0].max_gpus = 64;

  // Once the second node is up, the gang starts on both.
  s_.nodes.push_back(MakeNode(21, 2, 8));
  s_.pools[0].requested_gpus = 8;  // the small job's, still starting
  plan = Decide();
  auto parts = AssignmentsOf(plan, 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node_id + parts[1].node_id, 41);
}

TEST_F(CostPolicyTest, ReleasesNodesIdlePastTheTimeoutButNeverReserved) {
  ThreePools();
  for (auto& p : s_.pools) p.idle_timeout = 30min;
  s_.nodes[0].idle_since = At(-2h);     // reserved: kept
  s_.nodes[1].idle_since = At(-10min);  // on-demand, not idle long enough
  s_.nodes[2].idle_since = At(-45min);  // spot, idle 45m > 30m
  auto plan = Decide();
  ASSERT_EQ(plan.node_releases.size(), 1u);
  EXPECT_EQ(plan.node_releases[0].node_id, 30);
  EXPECT_EQ(plan.node_releases[0].reason,
            "idle for 45m, past the idle timeout of 30m of spot a100-spot");
}

TEST_F(CostPolicyTest, ALongSmallJobGetsANodeOfItsSizeNotAnIdleBigOne) {
  // An elastic on-demand pool whose provider sizes nodes to the jobs (no node_gpus), with
  // an 8-GPU node idle for 10 minutes (past its 5-minute timeout), and a 1-GPU 4-hour job:
  // on the big node 7 GPUs would idle 4 h; a node of its own costs a 5-minute startup.
  using model::CapacityKind;
  s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0, 1.0, 80, 64)};
  s_.pools[0].elastic = true;
  s_.pools[0].startup_delay = 5min;
  s_.pools[0].idle_timeout = 5min;
  s_.nodes = {MakeNode(20, 2, 8)};
  s_.nodes[0].idle_since = At(-10min);
  auto j = MakeJob(1, 1);
  j.estimate = 4h;
  s_.pending = {j};
  auto plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty());
  ASSERT_EQ(plan.node_requests.size(), 1u);
  EXPECT_EQ(plan.node_requests[0].gpus, 1);
  ASSERT_EQ(plan.node_releases.size(), 1u);  // the pool grows, but not for this node
  EXPECT_EQ(plan.node_releases[0].node_id, 20);

  // A half-minute job idles 3.5 GPU-minutes there, less than a new node's 5 of startup.
  s_.pending[0].estimate = 30s;
  plan = Decide();
  EXPECT_EQ(NodeOf(plan, 1), 20);
  EXPECT_TRUE(plan.node_releases.empty());

  // A job with no estimate of its own is not judged: its run may be any length.
  s_.pending[0].estimate.reset();
  plan = Decide();
  EXPECT_EQ(NodeOf(plan, 1), 20);

  // Nodes of a fixed size (8 GPUs): a new one would idle as much, so the idle one serves.
  s_.pending[0].estimate = 4h;
  s_.pools[0].node_gpus = 8;
  plan = Decide();
  EXPECT_EQ(NodeOf(plan, 1), 20);
  EXPECT_TRUE(plan.node_requests.empty());
}

TEST_F(CostPolicyTest, ExplainsJobsThatCanNeverRunHere) {
  ThreePools();
  auto tpu = MakeJob(1, 1);
  tpu.gpu_types = {"tpu"};
  auto huge = MakeJob(2, 64);
  s_.pending = {tpu, huge};
  auto plan = Decide();
  EXPECT_EQ(WaitReason(plan, 1), "waiting: no pool has GPUs of an allowed type (tpu)");
  // As the scheduler runs: a job that did not ask for nodes needs one node that big.
  EXPECT_EQ(WaitReason(plan, 2), "waiting: no pool of an allowed type can hold 64 GPU(s) on one node");
  // The simulator's trace jobs may be spread over nodes: then it is the pools' room.
  config_.spread_large_jobs = true;
  EXPECT_EQ(WaitReason(Decide(), 2),
            "waiting: no room for 64 GPU(s) in the pool(s) it may use "
            "(a100-reserved, a100-od, a100-spot)");
  s_.nodes.clear();
  EXPECT_EQ(WaitReason(Decide(), 1), "waiting: no live nodes are registered");
}

TEST(PolicyRegistryTest, KnowsTheCostPolicy) {
  auto p = MakePolicy("placement/cost");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Name(), "placement/cost");
  PolicyConfig config;
  config.min_run_time = 1h;
  auto q = MakePolicy("placement/cost", config);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(dynamic_cast<CostPolicy&>(**q).config().min_run_time, 1h);
  // Through the interface too: the engine's budget guard prices jobs with these knobs.
  const Policy& as_policy = **q;
  EXPECT_EQ(as_policy.config().min_run_time, 1h);
  auto fifo = MakePolicy("placement/fifo", config);
  ASSERT_TRUE(fifo.ok());
  EXPECT_EQ((*fifo)->config().min_run_time, PolicyConfig{}.min_run_time);
}

}  // namespace
}  // namespace frugal::policy
