// Team quotas: EnforceQuotas keeps any plan under them, with the quota as the reason, and
// placement/cost looks elsewhere when a team's quota on the cheapest capacity is full.
#include "scheduler/policy/admission/quota.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "tests/scheduler/policy/policy_test_util.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;

constexpr model::TeamId kVision = 1, kSpeech = 2;

model::RunningAttempt Running(model::AttemptId id, model::NodeId node, model::PoolId pool,
                              model::TeamId team, int gpus) {
  model::RunningAttempt r = MakeRunning(id, 1000 + id, node, gpus);
  r.pool_id = pool;
  r.team_id = team;
  return r;
}

model::PendingJob Job(model::JobId id, model::TeamId team, int gpus) {
  model::PendingJob j = MakeJob(id, gpus);
  j.team_id = team;
  return j;
}

// One on-demand pool (id 1, node 10 with 32 GPUs); vision holds 12 on-demand GPUs of a quota
// of 16.
model::Snapshot OnDemandSnapshot() {
  model::Snapshot s;
  s.now = T0();
  s.pools = {MakePool(1, "od", CapacityKind::kOnDemand)};
  s.nodes = {MakeNode(10, 1, 32)};
  s.running = {Running(1, 10, 1, kVision, 12)};
  s.quotas[kVision].by_kind[CapacityKind::kOnDemand] = 16;
  return s;
}

TEST(QuotaTest, PlanIsCutAtTheQuotaWithTheQuotaAsReason) {
  model::Snapshot s = OnDemandSnapshot();
  s.pending = {Job(1, kVision, 4), Job(2, kVision, 4), Job(3, kSpeech, 8)};
  model::Plan plan = FifoPolicy().Decide(s);
  ASSERT_EQ(plan.assignments.size(), 3u);  // fifo knows nothing of quotas
  EnforceQuotas(s, plan);
  // 12 + 4 = 16 fits; 16 + 4 does not; speech has no quota.
  EXPECT_EQ(AssignmentsOf(plan, 1).size(), 1u);
  EXPECT_TRUE(AssignmentsOf(plan, 2).empty());
  EXPECT_EQ(AssignmentsOf(plan, 3).size(), 1u);
  const model::Wait* w = WaitOf(plan, 2);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->reason, "waiting: over team quota: 16/16 on-demand GPUs in use");
}

TEST(QuotaTest, PoolQuotasHoldAlongsideKindQuotas) {
  model::Snapshot s = OnDemandSnapshot();
  s.quotas[kVision].by_kind.clear();
  s.quotas[kVision].by_pool[1] = 14;  // 12 in use: room for 2
  s.pending = {Job(1, kVision, 4)};
  model::Plan plan = FifoPolicy().Decide(s);
  EnforceQuotas(s, plan);
  EXPECT_TRUE(plan.assignments.empty());
  ASSERT_NE(WaitOf(plan, 1), nullptr);
  EXPECT_EQ(WaitOf(plan, 1)->reason, "waiting: over team quota: 12/14 GPUs of pool od in use");
}

TEST(QuotaTest, CostPolicyUsesSpotWhenTheOnDemandQuotaIsFull) {
  model::Snapshot s = OnDemandSnapshot();
  s.pools.push_back(MakePool(2, "spot", CapacityKind::kSpot, "a100", 1.0));
  s.nodes.push_back(MakeNode(20, 2, 8));
  s.quotas[kVision].by_kind[CapacityKind::kOnDemand] = 12;  // full
  model::PendingJob j = Job(1, kVision, 4);
  j.deadline = At(48h);
  j.estimate = 1h;
  s.pending = {j};
  model::Plan plan = CostPolicy().Decide(s);
  EnforceQuotas(s, plan);
  auto a = AssignmentsOf(plan, 1);
  ASSERT_EQ(a.size(), 1u) << (WaitOf(plan, 1) ? WaitOf(plan, 1)->reason : "");
  EXPECT_EQ(a[0].node_id, 20);
}

TEST(QuotaTest, AJobWithNoRoomAnywhereSaysWhichQuotaHoldsIt) {
  model::Snapshot s = OnDemandSnapshot();
  s.quotas[kVision].by_kind[CapacityKind::kOnDemand] = 12;  // full, and the only pool
  s.pending = {Job(1, kVision, 2)};
  model::Plan plan = CostPolicy().Decide(s);
  EnforceQuotas(s, plan);
  EXPECT_TRUE(plan.assignments.empty());
  ASSERT_NE(WaitOf(plan, 1), nullptr);
  EXPECT_EQ(WaitOf(plan, 1)->reason, "waiting: over team quota: 12/12 on-demand GPUs in use");
}

// The on-demand pool grows three GPUs a node (a job's size: no job is spread) up to 64,
// and its one node is full for 100 hours: every job needs a new node.
model::Snapshot GrowableOnDemand() {
  model::Snapshot s = OnDemandSnapshot();
  s.nodes = {MakeNode(10, 1, 12)};
  s.running[0].started_at = T0();
  s.running[0].estimate = Seconds(100 * 3600);
  s.pools[0].elastic = true;
  s.pools[0].node_gpus = 3;
  s.pools[0].max_gpus = 64;
  return s;
}

TEST(QuotaTest, NoNodeIsStartedForAJobOverItsTeamsQuota) {
  model::Snapshot s = GrowableOnDemand();
  s.pending = {Job(1, kVision, 3), Job(2, kVision, 3), Job(3, kSpeech, 3)};
  for (auto& j : s.pending) j.estimate = Seconds(5 * 3600);
  model::Plan plan = CostPolicy().Decide(s);
  // Each vision job fits alone (12 + 3 <= 16), so the policy asks for all three.
  ASSERT_EQ(plan.node_requests.size(), 1u);
  ASSERT_EQ(plan.node_requests[0].gpus, 9);
  ASSERT_EQ(plan.node_requests[0].job_ids, (std::vector<model::JobId>{1, 2, 3}));
  EnforceQuotas(s, plan);
  // Job 1 takes 3 (15 of 16); job 2 would make it 18: its node is not started. Speech has
  // no quota.
  ASSERT_EQ(plan.node_requests.size(), 1u);
  EXPECT_EQ(plan.node_requests[0].gpus, 6);
  EXPECT_EQ(plan.node_requests[0].job_ids, (std::vector<model::JobId>{1, 3}));
  EXPECT_NE(plan.node_requests[0].reason.find("3 GPU(s) fewer: job(s) 2 held by their team's "
                                              "quota"),
            std::string::npos)
      << plan.node_requests[0].reason;
  ASSERT_NE(WaitOf(plan, 2), nullptr);
  EXPECT_EQ(WaitOf(plan, 2)->reason, "waiting: over team quota: 15/16 on-demand GPUs in use");
  // A request that names no jobs goes when the only job that could use it is held.
  s.pending = {Job(4, kVision, 6)};
  plan = model::Plan{};
  plan.waits = {{4, "waiting: for capacity"}};
  plan.node_requests = {{1, 6, "a node for whoever"}};
  EnforceQuotas(s, plan);
  EXPECT_TRUE(plan.node_requests.empty());
  // ... and stays when a job with room could use it.
  s.pending.push_back(Job(5, kSpeech, 6));
  plan.node_requests = {{1, 6, "a node for whoever"}};
  EnforceQuotas(s, plan);
  EXPECT_EQ(plan.node_requests.size(), 1u);
}

TEST(QuotaTest, RandomPlansNeverExceedAQuota) {
  std::mt19937 rng(5);
  for (int round = 0; round < 500; ++round) {
    model::Snapshot s;
    s.now = T0();
    s.pools = {MakePool(1, "od", CapacityKind::kOnDemand), MakePool(2, "spot", CapacityKind::kSpot)};
    s.nodes = {MakeNode(10, 1, 16), MakeNode(11, 1, 16), MakeNode(20, 2, 16)};
    for (model::TeamId t = 1; t <= 3; ++t) {
      s.quotas[t].by_kind[CapacityKind::kOnDemand] = static_cast<int>(rng() % 12);
      s.quotas[t].by_kind[CapacityKind::kSpot] = static_cast<int>(rng() % 12);
    }
    for (model::JobId j = 1; j <= 12; ++j)
      s.pending.push_back(Job(j, 1 + static_cast<model::TeamId>(rng() % 3),
                              1 + static_cast<int>(rng() % 6)));
    for (bool cost : {false, true}) {
      model::Plan plan = cost ? CostPolicy().Decide(s) : FifoPolicy().Decide(s);
      EnforceQuotas(s, plan);
      std::map<std::pair<model::TeamId, CapacityKind>, int> used;
      for (const auto& a : plan.assignments) {
        model::TeamId team = 0;
        for (const auto& j : s.pending)
          if (j.id == a.job_id) team = j.team_id;
        const CapacityKind kind = a.node_id == 20 ? CapacityKind::kSpot : CapacityKind::kOnDemand;
        used[{team, kind}] += a.gpus;
      }
      for (const auto& [key, gpus] : used)
        ASSERT_LE(gpus, s.quotas[key.first].by_kind[key.second]) << "round " << round;
      for (const auto& v : PlanViolations(s, plan)) ADD_FAILURE() << v;
    }
  }
}

}  // namespace
}  // namespace frugal::policy
