// Nodes as first-class objects against a real PostgreSQL (decision 0021): the listing,
// admin drain/undrain/remove (each audited), the placement skip of drained nodes, a spot
// notice withdrawn, and registration's GPU check against the pool.
#include <gtest/gtest.h>

#include "common/crypto.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class NodeStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(store_->UpsertPool(testing::A100Pool("spot", model::CapacityKind::kSpot, 0)).ok());
  }

  Registration Register(const std::string& name, int gpus = 4) {
    auto r = store_->RegisterWorker(testing::A100Node(name, gpus), "spot", Seconds(60),
                                    std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Registration{};
  }

  model::JobId Submit() {
    SubmitRequest r;
    r.spec.command = {"train"};
    return store_->Submit(admin_, r)->job.id;
  }

  // One scheduling cycle with the fifo policy: first live node that fits.
  void Cycle() {
    ASSERT_TRUE(store_->SweepLostNodes().ok());
    auto snap = store_->LoadSnapshot({100, 100});
    ASSERT_TRUE(snap.ok());
    ASSERT_TRUE(store_->ApplyPlan(policy::FifoPolicy().Decide(*snap)).ok());
  }

  HeartbeatReply Beat(const std::string& node, std::int64_t epoch, bool notice = false,
                      std::string gpus = "[]") {
    HeartbeatRequest hb;
    hb.node = node;
    hb.node_id = NodeIdOf(node);
    hb.lease_epoch = epoch;
    hb.notice = notice;
    hb.gpu_stats_json = std::move(gpus);
    auto r = store_->Heartbeat(hb, Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HeartbeatReply{};
  }

  NodeInfo Node(const std::string& name) {
    auto nodes = store_->ListNodes();
    EXPECT_TRUE(nodes.ok()) << nodes.status().ToString();
    for (const auto& n : *nodes) {
      if (n.name == name) return n;
    }
    ADD_FAILURE() << "node " << name << " not listed";
    return {};
  }

  std::string NodeOfJob(model::JobId job) {
    auto d = store_->GetJob(job, std::nullopt);
    return d->attempts.empty() ? "" : d->attempts.back().node;
  }

  model::JobState State(model::JobId id) { return store_->GetJob(id, std::nullopt)->job.state; }

  int AuditCount(const std::string& action) {
    AuditFilter f;
    f.action = action;
    auto r = store_->ListAudit(f);
    EXPECT_TRUE(r.ok());
    return r.ok() ? static_cast<int>(r->size()) : -1;
  }

  void Sql(const std::string& sql) {
    auto conn = PgConn::Connect(conninfo_);
    ASSERT_TRUE(conn.ok());
    ASSERT_TRUE((*conn)->ExecScript(sql).ok()) << sql;
  }
};

TEST_F(NodeStoreTest, DrainedNodeTakesNoNewWorkWhileItsAttemptsRunAndUndrainRestoresIt) {
  Register("n1");
  // a. A job placed before the drain runs on n1.
  const model::JobId first = Submit();
  Cycle();
  ASSERT_EQ(State(first), model::JobState::kRunning);
  // b. Drained: a new job waits although n1 has 3 free GPUs, and the first keeps running.
  ASSERT_TRUE(store_->DrainNode(admin_, "n1").ok());
  const model::JobId second = Submit();
  Cycle();
  EXPECT_EQ(State(second), model::JobState::kPending);
  EXPECT_EQ(State(first), model::JobState::kRunning);
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok());
  EXPECT_TRUE(snap->nodes.empty());
  EXPECT_EQ(snap->running.size(), 1u);
  // c. Undrained: the next cycle places it on n1.
  ASSERT_TRUE(store_->UndrainNode(admin_, "n1").ok());
  Cycle();
  EXPECT_EQ(State(second), model::JobState::kRunning);
  EXPECT_EQ(NodeOfJob(second), "n1");
}

TEST_F(NodeStoreTest, AnAssignmentPlannedBeforeTheDrainIsNotApplied) {
  Register("n1");
  Submit();
  // The plan is made on a snapshot from before the drain; ApplyPlan checks the node again.
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok());
  const model::Plan plan = policy::FifoPolicy().Decide(*snap);
  ASSERT_EQ(plan.assignments.size(), 1u);
  ASSERT_TRUE(store_->DrainNode(admin_, "n1").ok());
  auto started = store_->ApplyPlan(plan);
  ASSERT_TRUE(started.ok());
  EXPECT_EQ(started->started, 0);
}

TEST_F(NodeStoreTest, DrainAndUndrainAreAuditedOnlyWhenTheyChangeSomething) {
  Register("n1");
  auto drained = store_->DrainNode(admin_, "n1");
  ASSERT_TRUE(drained.ok());
  EXPECT_EQ(drained->state, "draining");
  EXPECT_EQ(drained->drain, "admin");
  EXPECT_EQ(drained->drained_by, admin_.user);
  ASSERT_TRUE(store_->DrainNode(admin_, "n1").ok());  // again: unchanged
  EXPECT_EQ(AuditCount("node.drain"), 1);
  auto undrained = store_->UndrainNode(admin_, "n1");
  ASSERT_TRUE(undrained.ok());
  EXPECT_EQ(undrained->state, "ready");
  ASSERT_TRUE(store_->UndrainNode(admin_, "n1").ok());
  EXPECT_EQ(AuditCount("node.undrain"), 1);
  EXPECT_EQ(store_->DrainNode(admin_, "nope").status().code(), StatusCode::kNotFound);
}

TEST_F(NodeStoreTest, ListShowsGpusStateWorkUtilisationAndAges) {
  auto reg = Register("n1");
  Register("n2", 2);
  const model::JobId job = Submit();
  Cycle();
  ASSERT_EQ(NodeOfJob(job), "n1");
  // Utilisation: the mean of the readings with a number, (90 + 30) / 2 = 60.
  Beat("n1", reg.lease_epoch, false,
       R"([{"index":0,"utilization":90},{"index":1,"utilization":30},{"index":2}])");
  Sql("UPDATE nodes SET credential_issued_at = now() - interval '2 hours' WHERE name = 'n1'");
  Sql("UPDATE nodes SET lease_expires_at = now() - interval '1 second' WHERE name = 'n2'");
  const NodeInfo n1 = Node("n1");
  EXPECT_EQ(n1.pool, "spot");
  EXPECT_EQ(n1.gpus, 4);
  EXPECT_EQ(n1.gpu_type, "a100");
  EXPECT_EQ(n1.gpu_mem_gb, 80);
  EXPECT_EQ(n1.state, "ready");
  EXPECT_EQ(n1.running_attempts, 1);
  ASSERT_TRUE(n1.gpu_utilization.has_value());
  EXPECT_DOUBLE_EQ(*n1.gpu_utilization, 60.0);
  ASSERT_TRUE(n1.credential_issued_at.has_value());
  const auto age = std::chrono::duration_cast<Seconds>(n1.as_of - *n1.credential_issued_at);
  EXPECT_GE(age.count(), 7200);
  EXPECT_LT(age.count(), 7300);
  const NodeInfo n2 = Node("n2");
  EXPECT_EQ(n2.state, "lost");
  EXPECT_FALSE(n2.gpu_utilization.has_value());
  EXPECT_EQ(n2.running_attempts, 0);
}

TEST_F(NodeStoreTest, RemoveIsRefusedWhileTheNodeIsLiveOrStillRunsWork) {
  auto reg = Register("n1");
  const model::JobId job = Submit();
  Cycle();
  // a. Live and not drained: refused, whatever it runs.
  auto live = store_->RemoveNode(admin_, "n1");
  EXPECT_EQ(live.status().code(), StatusCode::kConflict);
  EXPECT_NE(live.status().message().find("drain it first"), std::string::npos)
      << live.status().message();
  // b. Drained but its attempt still runs: refused.
  ASSERT_TRUE(store_->DrainNode(admin_, "n1").ok());
  auto busy = store_->RemoveNode(admin_, "n1");
  EXPECT_EQ(busy.status().code(), StatusCode::kConflict);
  EXPECT_NE(busy.status().message().find("still runs 1 attempt"), std::string::npos)
      << busy.status().message();
  // c. Drained and empty: removed, audited, no longer listed, its credential dead.
  const auto attempt = store_->GetJob(job, std::nullopt)->attempts.at(0).id;
  ASSERT_TRUE(store_->FinishAttempt(attempt, reg.lease_epoch, Outcome::kSucceeded, 0,
                                    AuthOf(attempt))
                  .ok());
  auto removed = store_->RemoveNode(admin_, "n1");
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(AuditCount("node.remove"), 1);
  auto nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
  EXPECT_FALSE(store_->Authenticate(Sha256Hex(reg.credential)).ok());
  EXPECT_EQ(store_->RemoveNode(admin_, "n1").status().code(), StatusCode::kNotFound);
  // d. Its worker may join again with a join token: a new node, not drained.
  Register("n1");
  EXPECT_EQ(Node("n1").state, "ready");
}

TEST_F(NodeStoreTest, RemovingALostNodeRequeuesItsJobs) {
  Register("n1");
  const model::JobId job = Submit();
  Cycle();
  Sql("UPDATE nodes SET lease_expires_at = now() - interval '1 second'");
  auto removed = store_->RemoveNode(admin_, "n1");
  ASSERT_TRUE(removed.ok()) << removed.status().ToString();
  EXPECT_EQ(removed->state, "lost");
  EXPECT_EQ(State(job), model::JobState::kPending);
  EXPECT_EQ(store_->GetJob(job, std::nullopt)->attempts.at(0).end_reason, "node_lost");
}

TEST_F(NodeStoreTest, WithdrawnNoticeMakesTheNodeReadyButAnAdminDrainStays) {
  auto reg = Register("n1");
  // a. A notice drains it: nothing new is placed.
  EXPECT_FALSE(Beat("n1", reg.lease_epoch, /*notice=*/true).notice_withdrawn);
  EXPECT_EQ(Node("n1").state, "draining");
  EXPECT_EQ(Node("n1").drain, "notice");
  const model::JobId job = Submit();
  Cycle();
  EXPECT_EQ(State(job), model::JobState::kPending);
  // b. Withdrawn (a heartbeat without the notice): ready, and the job is placed.
  EXPECT_TRUE(Beat("n1", reg.lease_epoch, /*notice=*/false).notice_withdrawn);
  EXPECT_EQ(Node("n1").state, "ready");
  EXPECT_FALSE(Node("n1").notice_at.has_value());
  Cycle();
  EXPECT_EQ(State(job), model::JobState::kRunning);
  // c. An admin drain is not a notice: a notice and its withdrawal leave it drained.
  ASSERT_TRUE(store_->DrainNode(admin_, "n1").ok());
  Beat("n1", reg.lease_epoch, true);
  EXPECT_TRUE(Beat("n1", reg.lease_epoch, false).notice_withdrawn);
  EXPECT_EQ(Node("n1").state, "draining");
  EXPECT_EQ(Node("n1").drain, "admin");
  // d. And undrain does not end a standing notice.
  Beat("n1", reg.lease_epoch, true);
  ASSERT_TRUE(store_->UndrainNode(admin_, "n1").ok());
  EXPECT_EQ(Node("n1").drain, "notice");
}

TEST_F(NodeStoreTest, RegistrationRefusesANodeWhoseGpuIsNotThePools) {
  model::Node t4 = testing::A100Node("t4-node", 1);
  t4.gpu_type = "T4";
  t4.gpu_mem_gb = 16;
  auto r = store_->RegisterWorker(t4, "spot", Seconds(60), std::nullopt);
  ASSERT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("node gpu T4 16 GB does not match pool spot (a100, 80 GB)"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().field(), "gpu_type");
  auto nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  EXPECT_TRUE(nodes->empty());
  // The right type with 40 GB is refused for its memory; "A100" with 79 GB is the pool's.
  model::Node small = testing::A100Node("a100-40", 1);
  small.gpu_mem_gb = 40;
  EXPECT_EQ(store_->RegisterWorker(small, "spot", Seconds(60), std::nullopt).status().field(),
            "gpu_mem_gb");
  model::Node close = testing::A100Node("a100-79", 1);
  close.gpu_type = "A100";
  close.gpu_mem_gb = 79;
  EXPECT_TRUE(store_->RegisterWorker(close, "spot", Seconds(60), std::nullopt).ok());
}

}  // namespace
}  // namespace frugal::store
