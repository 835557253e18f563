// Snapshot and plan application against a real PostgreSQL.
#include <gtest/gtest.h>

#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class ApplyPlanTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("a100-spot", model::CapacityKind::kSpot, 1'200'000))
            .ok());
  }

  model::Node AddNode(const std::string& name, int gpus) {
    model::Node n = testing::A100Node(name, gpus);
    auto r = store_->RegisterWorker(n, "a100-spot", Seconds(60), std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    n.id = r->node_id;
    return n;
  }

  model::JobId Submit(int gpus) {
    SubmitRequest r;
    r.spec.command = {"true"};
    r.spec.gpus = gpus;
    auto res = store_->Submit(admin_, r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res->job.id;
  }
};

TEST_F(ApplyPlanTest, AssignmentsStartAttemptsInOneStep) {
  AddNode("n1", 8);
  model::JobId a = Submit(4), b = Submit(4), c = Submit(4);
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  EXPECT_EQ(snap->pending.size(), 3u);
  EXPECT_EQ(snap->nodes.size(), 1u);
  EXPECT_EQ(snap->pools.size(), 1u);
  auto plan = policy::FifoPolicy().Decide(*snap);
  // 8 GPUs: jobs a and b (4 each) start, c waits.
  auto started = store_->ApplyPlan(plan);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->started, 2);
  auto da = store_->GetJob(a, std::nullopt);
  EXPECT_EQ(da->job.state, model::JobState::kRunning);
  ASSERT_EQ(da->attempts.size(), 1u);
  EXPECT_EQ(da->attempts[0].node, "n1");
  EXPECT_EQ(da->attempts[0].pool, "a100-spot");
  EXPECT_EQ(store_->GetJob(b, std::nullopt)->job.state, model::JobState::kRunning);
  auto dc = store_->GetJob(c, std::nullopt);
  EXPECT_EQ(dc->job.state, model::JobState::kPending);
  EXPECT_EQ(dc->job.reason, "waiting: all 1 fitting node(s) are busy");

  // The next snapshot sees the 8 GPUs in use.
  auto next = store_->LoadSnapshot({100, 100});
  EXPECT_EQ(next->running.size(), 2u);
  EXPECT_EQ(next->pending.size(), 1u);
}

TEST_F(ApplyPlanTest, AStalePlanStartsNothingTwice) {
  AddNode("n1", 8);
  Submit(2);
  auto snap = store_->LoadSnapshot({100, 100});
  auto plan = policy::FifoPolicy().Decide(*snap);
  EXPECT_EQ(store_->ApplyPlan(plan)->started, 1);
  // Applying the same plan again (e.g. a second scheduler with an old snapshot).
  EXPECT_EQ(store_->ApplyPlan(plan)->started, 0);
  auto conn = PgConn::Connect(conninfo_);
  EXPECT_EQ((*conn)->ExecScript("SELECT count(*) FROM attempts")->Int(0, 0), 1);
}

TEST_F(ApplyPlanTest, DatabaseRefusesASecondActiveAttempt) {
  model::Node n = AddNode("n1", 8);
  model::JobId j = Submit(1);
  auto conn = PgConn::Connect(conninfo_);
  auto insert = [&](int number) {
    return (*conn)->Exec("attempt_" + std::to_string(number),
                         "INSERT INTO attempts (job_id, team_id, number, node_id, gpus,"
                         " lease_epoch) SELECT $1, team_id, $2, $3, 1, 1 FROM jobs"
                         " WHERE id = $1",
                         {std::to_string(j), std::to_string(number), std::to_string(n.id)});
  };
  ASSERT_TRUE(insert(1).ok());
  auto second = insert(2);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kConflict);  // unique partial index
}

TEST_F(ApplyPlanTest, ExpiredNodesAreNotInTheSnapshot) {
  model::Node n = testing::A100Node("gone", 8);
  ASSERT_TRUE(store_->RegisterWorker(n, "a100-spot", Seconds(0), std::nullopt).ok());
  EXPECT_TRUE(store_->LoadSnapshot({10, 10})->nodes.empty());
  EXPECT_EQ(store_->RegisterWorker(n, "no-such-pool", Seconds(60), std::nullopt).status().field(), "pool");
}

TEST_F(ApplyPlanTest, FailedDependencyHoldsTheDependentAndAfterAnyStillRuns) {
  model::JobId parent = Submit(1);
  SubmitRequest r;
  r.spec.command = {"true"};
  r.spec.after = {parent};
  model::JobId child = store_->Submit(admin_, r)->job.id;
  SubmitRequest cleanup;
  cleanup.spec.command = {"true"};
  cleanup.spec.after_any = {parent};
  model::JobId sweeper = store_->Submit(admin_, cleanup)->job.id;
  auto stored = store_->GetJob(sweeper, std::nullopt);
  EXPECT_TRUE(stored->job.spec.after.empty());
  EXPECT_EQ(stored->job.spec.after_any, std::vector<model::JobId>{parent});
  auto snap = store_->LoadSnapshot({10, 10});
  // The child waits for its parent.
  auto plan = policy::FifoPolicy().Decide(*snap);
  ASSERT_TRUE(store_->ApplyPlan(plan).ok());
  EXPECT_EQ(store_->GetJob(child, std::nullopt)->job.reason,
            "waiting: for dependencies " + std::to_string(parent) + " to succeed");
  ASSERT_TRUE(store_->CancelJob(parent, std::nullopt, "admin").ok());
  plan = policy::FifoPolicy().Decide(*store_->LoadSnapshot({10, 10}));
  ASSERT_TRUE(store_->ApplyPlan(plan).ok());
  // Held, with the reason, not ended: the owner decides.
  auto held = store_->GetJob(child, std::nullopt);
  EXPECT_EQ(held->job.state, model::JobState::kHeld);
  EXPECT_EQ(held->job.reason,
            "held: dependency " + std::to_string(parent) + " did not succeed");
  // after_any only needed the parent to end: it is placed (no nodes here, so it waits on
  // capacity, not on the dependency).
  auto waiting = store_->GetJob(sweeper, std::nullopt);
  EXPECT_EQ(waiting->job.state, model::JobState::kPending);
  EXPECT_EQ(waiting->job.reason.find("dependenc"), std::string::npos) << waiting->job.reason;
  ASSERT_TRUE(store_->CancelJob(child, std::nullopt, "admin").ok());  // held jobs can be ended
}

}  // namespace
}  // namespace frugal::store
