// The fixture of the placement/cost scenario tests: a snapshot under construction,
// Decide with the contract checked, and lookups of what became of a job.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "tests/scheduler/policy/policy_test_util.h"
#include "scheduler/policy/placement/cost_policy.h"

namespace frugal::policy::testing {

class CostPolicyTest : public ::testing::Test {
 protected:
  // Three a100 pools of one 8-GPU node each: reserved $2/h (node 10), on-demand $3/h
  // (node 20), spot $1/h with 0.05 reclaims per node-hour (node 30).
  void ThreePools() {
    using model::CapacityKind;
    s_.pools = {MakePool(1, "a100-reserved", CapacityKind::kReserved, "a100", 2.0),
                MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0),
                MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0)};
    s_.pools[2].preemption_rate_per_node_hour = 0.05;
    s_.nodes = {MakeNode(10, 1, 8), MakeNode(20, 2, 8), MakeNode(30, 3, 8)};
  }
  // An on-demand a100 pool $3/h (node 20) and a spot a100 pool $1/h, 0.1 reclaims per
  // node-hour, 8 GPUs at most, that is down (no node): the spot-return scenarios.
  void SpotDown() {
    using model::CapacityKind;
    s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0),
                MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0, 1.0, 80, 8)};
    s_.pools[1].preemption_rate_per_node_hour = 0.1;
    s_.nodes = {MakeNode(20, 2, 8)};
  }
  // A 1-GPU checkpointed job of 10 h, a checkpoint every hour, due `deadline_in` from now.
  model::PendingJob CheckpointedJob(Seconds deadline_in) {
    auto j = MakeJob(1, 1, 2, model::Tolerance::kCheckpointed);
    j.estimate = Seconds(10 * 3600);
    j.checkpoint_interval = Seconds(3600);
    j.deadline = At(deadline_in);
    return j;
  }
  model::Plan Decide() {
    s_.now = T0();
    model::Plan plan = CostPolicy(config_).Decide(s_);
    auto violations = PlanViolations(s_, plan);
    for (const auto& v : violations) ADD_FAILURE() << v;
    return plan;
  }
  model::NodeId NodeOf(const model::Plan& plan, model::JobId job) {
    auto a = AssignmentsOf(plan, job);
    return a.size() == 1 ? a[0].node_id : -1;
  }
  std::string WaitReason(const model::Plan& plan, model::JobId job) {
    const model::Wait* w = WaitOf(plan, job);
    return w ? w->reason : "(not waiting)";
  }
  model::Snapshot s_;
  PolicyConfig config_;
};

}  // namespace frugal::policy::testing
