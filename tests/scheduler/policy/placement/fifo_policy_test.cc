#include "scheduler/policy/placement/fifo_policy.h"

#include <gtest/gtest.h>

#include "scheduler/policy/policy.h"

namespace frugal::policy {
namespace {

using model::Node;
using model::PendingJob;
using model::Snapshot;

Node MakeNode(model::NodeId id, int gpus, const std::string& type = "a100", int mem = 80) {
  Node n;
  n.id = id;
  n.name = "node-" + std::to_string(id);
  n.gpus = gpus;
  n.gpu_type = type;
  n.gpu_mem_gb = mem;
  return n;
}

PendingJob MakeJob(model::JobId id, int gpus, int rank = 2) {
  PendingJob j;
  j.id = id;
  j.gpus = gpus;
  j.priority_rank = rank;
  return j;
}

TEST(FifoPolicyTest, WaitsWithAReasonWhenNoNodesExist) {
  Snapshot s;
  s.pending = {MakeJob(1, 1)};
  auto plan = FifoPolicy().Decide(s);
  EXPECT_TRUE(plan.assignments.empty());
  ASSERT_EQ(plan.waits.size(), 1u);
  EXPECT_EQ(plan.waits[0].reason, "waiting: no live nodes are registered");
}

TEST(FifoPolicyTest, HigherClassGoesFirstThenSubmitOrder) {
  // One node with 4 GPUs. Jobs: 1 (normal, 2 GPUs), 2 (critical, 4 GPUs), 3 (normal, 2).
  // Critical job 2 takes all 4 GPUs; 1 and 3 wait for busy nodes.
  Snapshot s;
  s.nodes = {MakeNode(10, 4)};
  s.pending = {MakeJob(1, 2), MakeJob(2, 4, /*rank=*/0), MakeJob(3, 2)};
  auto plan = FifoPolicy().Decide(s);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].job_id, 2);
  ASSERT_EQ(plan.waits.size(), 2u);
  EXPECT_EQ(plan.waits[0].job_id, 1);
  EXPECT_EQ(plan.waits[0].reason, "waiting: all 1 fitting node(s) are busy");
}

TEST(FifoPolicyTest, CountsGpusHeldByRunningAttempts) {
  // 8 GPUs, 6 in use: a 4-GPU job waits, a 2-GPU job fits.
  Snapshot s;
  s.nodes = {MakeNode(10, 8)};
  s.running = {{100, 50, 10, 6, 2}};
  s.pending = {MakeJob(1, 4), MakeJob(2, 2)};
  auto plan = FifoPolicy().Decide(s);
  ASSERT_EQ(plan.assignments.size(), 1u);
  EXPECT_EQ(plan.assignments[0].job_id, 2);
  EXPECT_EQ(plan.assignments[0].node_id, 10);
}

TEST(FifoPolicyTest, RespectsGpuTypeAndMemory) {
  Snapshot s;
  s.nodes = {MakeNode(10, 8, "l4", 24), MakeNode(11, 8, "h100", 80)};
  PendingJob typed = MakeJob(1, 1);
  typed.gpu_types = {"h100"};
  PendingJob big_mem = MakeJob(2, 1);
  big_mem.min_gpu_mem_gb = 40;
  PendingJob impossible = MakeJob(3, 1);
  impossible.gpu_types = {"tpu"};
  s.pending = {typed, big_mem, impossible};
  auto plan = FifoPolicy().Decide(s);
  ASSERT_EQ(plan.assignments.size(), 2u);
  EXPECT_EQ(plan.assignments[0].node_id, 11);
  EXPECT_EQ(plan.assignments[1].node_id, 11);
  ASSERT_EQ(plan.waits.size(), 1u);
  EXPECT_EQ(plan.waits[0].reason, "waiting: no live node has 1 GPU(s) of an allowed type");
}

TEST(FifoPolicyTest, DependenciesHoldOrCancel) {
  Snapshot s;
  s.nodes = {MakeNode(10, 8)};
  PendingJob blocked = MakeJob(1, 1);
  blocked.waiting_for = {7, 8};
  PendingJob doomed = MakeJob(2, 1);
  doomed.failed_dependency = 9;
  s.pending = {blocked, doomed};
  auto plan = FifoPolicy().Decide(s);
  EXPECT_TRUE(plan.assignments.empty());
  ASSERT_EQ(plan.waits.size(), 1u);
  EXPECT_EQ(plan.waits[0].reason, "waiting: for dependencies 7, 8 to succeed");
  ASSERT_EQ(plan.holds.size(), 1u);
  EXPECT_EQ(plan.holds[0].job_id, 2);
}

TEST(FifoPolicyTest, SameSnapshotSamePlan) {
  Snapshot s;
  s.nodes = {MakeNode(11, 4), MakeNode(10, 4)};
  s.pending = {MakeJob(3, 2), MakeJob(1, 2), MakeJob(2, 4)};
  auto a = FifoPolicy().Decide(s), b = FifoPolicy().Decide(s);
  ASSERT_EQ(a.assignments.size(), b.assignments.size());
  for (size_t i = 0; i < a.assignments.size(); ++i) {
    EXPECT_EQ(a.assignments[i].job_id, b.assignments[i].job_id);
    EXPECT_EQ(a.assignments[i].node_id, b.assignments[i].node_id);
  }
  // Ties broken by id: job 1 to node 10 first.
  EXPECT_EQ(a.assignments[0].job_id, 1);
  EXPECT_EQ(a.assignments[0].node_id, 10);
}

TEST(PolicyRegistryTest, KnowsFifoAndRejectsUnknownNames) {
  auto p = MakePolicy("placement/fifo");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ((*p)->Name(), "placement/fifo");
  auto bad = MakePolicy("placement/magic");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("placement/fifo"), std::string::npos);
}

}  // namespace
}  // namespace frugal::policy
