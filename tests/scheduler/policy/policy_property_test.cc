// Thousands of seeded random snapshots, some with bad data on purpose (over-full nodes,
// odd node types, unknown pools, progress > 1), through both policies: every plan must keep
// the contract (PlanViolations), be deterministic, and for placement/cost also keep its
// own rules on stops, requests and releases.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "policy_test_util.h"
#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/placement/fifo_policy.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::CapacityKind;
using model::Tolerance;

class Gen {
 public:
  explicit Gen(unsigned seed) : rng_(seed) {}
  int Int(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool Chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[Int(0, static_cast<int>(v.size()) - 1)];
  }

  // Small by default; `scale` > 1 gives many pools, nodes and jobs (the flow's coarse rows).
  model::Snapshot Snapshot(int scale = 1) {
    model::Snapshot s;
    s.now = T0();
    const std::vector<std::string> types = {"a100", "h100", "l4"};
    int pools = scale > 1 ? 12 : Int(0, 5);
    for (int p = 1; p <= pools; ++p) {
      auto kind = static_cast<CapacityKind>(Int(0, 2));
      auto pool = MakePool(p, "pool-" + std::to_string(p), kind, Pick(types), Int(1, 50) / 10.0,
                           Pick(std::vector<double>{0.3, 1.0, 2.0}), Pick(std::vector<int>{24, 80}),
                           Chance(0.5) ? 0 : Int(4, 40));
      pool.preemption_rate_per_node_hour = kind == CapacityKind::kSpot ? Int(0, 30) / 100.0 : 0;
      pool.elastic = Chance(0.3);
      pool.startup_delay = Seconds(Int(0, 900));
      pool.node_gpus = Pick(std::vector<int>{0, 4, 8});
      pool.idle_timeout = Seconds(Chance(0.5) ? 0 : Int(60, 3600));
      pool.requested_gpus = Chance(0.2) ? Int(1, 8) : 0;
      s.pools.push_back(pool);
    }
    int nodes = scale > 1 ? 10 * scale : Int(0, 10);
    for (int n = 1; n <= nodes; ++n) {
      int pool_id = pools && !Chance(0.02) ? Int(1, pools) : 99;
      const model::Pool* p = pool_id <= pools ? &s.pools[pool_id - 1] : nullptr;
      bool odd = !p || Chance(0.05);
      auto node = MakeNode(10 + n, pool_id, Pick(std::vector<int>{1, 2, 4, 8}),
                           odd ? Pick(types) : p->gpu_type, odd ? 80 : p->gpu_mem_gb);
      node.under_notice = Chance(0.05);
      if (Chance(0.4)) node.idle_since = At(-Seconds(Int(0, 7200)));
      s.nodes.push_back(node);
    }
    int attempt = 100000;
    for (const auto& n : s.nodes) {
      int used = 0, limit = Chance(0.05) ? n.gpus + 2 : n.gpus;  // sometimes over-full
      while (used < limit && Chance(0.5)) {
        int g = std::min(limit - used, Pick(std::vector<int>{1, 2, 4}));
        auto r = MakeRunning(attempt, 100000 + attempt, n.id, g, Int(0, 3));
        ++attempt;
        r.pool_id = n.pool_id;
        r.tolerance = static_cast<Tolerance>(Int(0, 2));
        r.started_at = At(-Seconds(Int(0, 4 * 3600)));
        if (Chance(0.5)) r.estimate = Seconds(Int(600, 20 * 3600));
        if (Chance(0.5)) r.last_checkpoint_at = At(-Seconds(Int(0, 3600)));
        r.progress = Int(0, 100) / 100.0;
        if (Chance(0.5)) r.deadline = At(Seconds(Int(-3600, 30 * 3600)));
        if (Chance(0.2)) r.last_priority_preemption_at = At(-Seconds(Int(0, 7200)));
        r.stopping = Chance(0.1);
        s.running.push_back(r);
        used += g;
      }
    }
    int jobs = Int(0, 30) * scale * scale / 4 + (scale > 1 ? 1000 : 0);
    for (int j = 1; j <= jobs; ++j) {
      auto job = MakeJob(j, Pick(std::vector<int>{1, 1, 2, 4, 8, 16}), Int(0, 3),
                         static_cast<Tolerance>(Int(0, 2)));
      job.team_id = Int(1, 3);
      if (Chance(0.3)) job.gpu_types = {Pick(types)};
      if (Chance(0.2)) job.min_gpu_mem_gb = Pick(std::vector<int>{16, 40, 80});
      if (Chance(0.7)) job.estimate = Seconds(Int(60, 48 * 3600));
      if (Chance(0.4)) job.deadline = At(Seconds(Int(-600, 72 * 3600)));
      if (Chance(0.5)) job.checkpoint_interval = Seconds(Int(300, 7200));
      job.progress = Chance(0.05) ? 1.5 : Int(0, 90) / 100.0;
      job.created_at = At(-Seconds(Int(0, 48 * 3600)));
      if (Chance(0.05)) job.waiting_for = {Int(50000, 60000)};
      if (Chance(0.03)) job.failed_dependency = Int(50000, 60000);
      s.pending.push_back(job);
    }
    s.team_usage[1] = {static_cast<double>(Int(0, 1000)), At(-24h)};
    s.team_shares[2] = Int(1, 4);
    return s;
  }

 private:
  std::mt19937 rng_;
};

// placement/cost's own rules beyond the contract.
void CheckCostRules(const model::Snapshot& s, const model::Plan& plan) {
  PolicyConfig config;
  std::map<model::AttemptId, const model::RunningAttempt*> attempts;
  for (const auto& r : s.running) attempts[r.attempt_id] = &r;
  std::map<model::PoolId, const model::Pool*> pools;
  for (const auto& p : s.pools) pools[p.id] = &p;
  int preempted_jobs = 0;
  std::map<model::JobId, bool> seen;
  for (const auto& st : plan.stops) {
    const auto& r = *attempts.at(st.attempt_id);
    if (st.kind == model::StopKind::kPriorityPreemption) {
      EXPECT_FALSE(WhyNotPreemptable(r, s.now, config).has_value()) << st.reason;
      if (!seen[r.job_id]) ++preempted_jobs, seen[r.job_id] = true;
    } else if (st.kind == model::StopKind::kMigrateOffSpot) {
      EXPECT_EQ(r.tolerance, Tolerance::kCheckpointed);
      EXPECT_TRUE(r.deadline.has_value());
      EXPECT_EQ(pools.at(r.pool_id)->kind, CapacityKind::kSpot);
    } else {  // back to spot: only checkpointed jobs, only off on-demand (reserved is paid)
      EXPECT_EQ(r.tolerance, Tolerance::kCheckpointed);
      EXPECT_EQ(pools.at(r.pool_id)->kind, CapacityKind::kOnDemand);
    }
  }
  EXPECT_LE(preempted_jobs, config.max_preemptions_per_cycle);
  std::map<model::NodeId, const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes[n.id] = &n;
  for (const auto& rel : plan.node_releases) {
    const auto* n = nodes.at(rel.node_id);
    ASSERT_TRUE(n->idle_since.has_value());
    const auto* p = pools.count(n->pool_id) ? pools.at(n->pool_id) : nullptr;
    ASSERT_NE(p, nullptr);
    EXPECT_GE(s.now - *n->idle_since, p->idle_timeout);
    EXPECT_GT(p->idle_timeout.count(), 0);
  }
}

const CostPolicy kCost;
const FifoPolicy kFifo;

TEST(PolicyPropertyTest, RandomSnapshotsKeepEveryInvariant) {
  int placed = 0, preemptions = 0, migrations = 0, requests = 0, releases = 0;
  for (unsigned seed = 0; seed < 3000; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    model::Snapshot s = Gen(seed).Snapshot();
    for (const Policy* policy :
         {static_cast<const Policy*>(&kCost), static_cast<const Policy*>(&kFifo)}) {
      model::Plan plan = policy->Decide(s);
      for (const auto& v : PlanViolations(s, plan)) ADD_FAILURE() << policy->Name() << ": " << v;
      ASSERT_TRUE(SamePlan(plan, policy->Decide(s))) << policy->Name() << " is not deterministic";
      if (policy == &kCost) {
        CheckCostRules(s, plan);
        placed += static_cast<int>(plan.assignments.size());
        for (const auto& st : plan.stops)
          ++(st.kind == model::StopKind::kPriorityPreemption ? preemptions : migrations);
        requests += static_cast<int>(plan.node_requests.size());
        releases += static_cast<int>(plan.node_releases.size());
      }
      if (HasFailure()) return;
    }
  }
  // The generator must exercise every kind of decision, or the test proves little.
  EXPECT_GT(placed, 1000);
  EXPECT_GT(preemptions, 20);
  EXPECT_GT(migrations, 10);
  EXPECT_GT(requests, 50);
  EXPECT_GT(releases, 50);
}

TEST(PolicyPropertyTest, LargeSnapshotsKeepEveryInvariantToo) {
  // Thousands of jobs on hundreds of nodes: the flow runs with coarse rows, the rounding
  // and repair steps do real work, and the result must still keep every rule.
  for (unsigned seed = 0; seed < 3; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    model::Snapshot s = Gen(seed).Snapshot(/*scale=*/40);
    model::Plan plan = kCost.Decide(s);
    for (const auto& v : PlanViolations(s, plan)) ADD_FAILURE() << v;
    CheckCostRules(s, plan);
    EXPECT_TRUE(SamePlan(plan, kCost.Decide(s)));
    EXPECT_GT(plan.assignments.size(), 50u);
  }
}

}  // namespace
}  // namespace frugal::policy
