// Multi-node gangs against a real PostgreSQL (decision 0032): the cost policy places a gang
// on distinct nodes, the store starts it all or nothing, tells each part its rank and
// master, stops the rest when one part ends badly, and moves the job once, when the last
// part has ended.
#include <gtest/gtest.h>

#include "scheduler/policy/cost_policy.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class GangStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, 1'000'000))
            .ok());
  }

  Registration Register(const std::string& name, int gpus = 4) {
    model::Node n = testing::A100Node(name, gpus);
    n.address = "10.0.0." + name.substr(1);
    const model::NodeId id = NodeIdOf(name);
    auto r = store_->RegisterWorker(n, "od", Seconds(60),
                                    id ? std::optional<model::NodeId>(id) : std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Registration{};
  }

  model::JobId SubmitGang(int nodes, int gpus_per_node) {
    SubmitRequest r;
    r.spec.command = {"torchrun", "train.py"};
    r.spec.nodes = nodes;
    r.spec.gpus = nodes * gpus_per_node;
    r.spec.tolerance = model::Tolerance::kCheckpointed;
    r.spec.checkpoint_interval = Seconds(600);
    auto res = store_->Submit(admin_, r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? res->job.id : 0;
  }

  model::Plan Decide() {
    auto snap = store_->LoadSnapshot(100);
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    policy::PolicyConfig config;
    config.multi_node_gangs = true;     // as production runs: only jobs that ask for nodes
    config.spread_large_jobs = false;  // span them
    return policy::CostPolicy(config).Decide(*snap);
  }

  HeartbeatReply Beat(const std::string& node, std::int64_t epoch,
                      std::vector<model::AttemptId> running = {}) {
    HeartbeatRequest hb;
    hb.node = node;
    hb.lease_epoch = epoch;
    hb.node_id = NodeIdOf(node);
    hb.running = std::move(running);
    auto r = store_->Heartbeat(hb, Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HeartbeatReply{};
  }

  model::JobState State(model::JobId id) { return store_->GetJob(id, std::nullopt)->job.state; }

  std::int64_t Count(const std::string& sql) {
    auto conn = PgConn::Connect(conninfo_);
    return (*conn)->ExecScript(sql)->Int(0, 0);
  }
};

TEST_F(GangStoreTest, AGangStartsOnDistinctNodesWithRanksAndOneMaster) {
  auto r1 = Register("n1"), r2 = Register("n2"), r3 = Register("n3");
  model::JobId job = SubmitGang(2, 4);
  model::Plan plan = Decide();
  ASSERT_EQ(plan.assignments.size(), 2u) << "a 2-node gang is two parts";
  EXPECT_NE(plan.assignments[0].node_id, plan.assignments[1].node_id);
  EXPECT_EQ(plan.assignments[0].gpus, 4);
  EXPECT_EQ(plan.assignments[1].gpus, 4);
  ASSERT_EQ(*store_->ApplyPlan(plan), 1) << "one job started";
  EXPECT_EQ(State(job), model::JobState::kRunning);
  EXPECT_EQ(Count("SELECT count(*) FROM attempts WHERE gang_size = 2 AND number = 1"), 2);

  std::map<int, AttemptOrder> by_rank;
  for (auto [name, reg] : {std::pair{"n1", r1}, {"n2", r2}, {"n3", r3}}) {
    for (auto& o : Beat(name, reg.lease_epoch).assignments) by_rank[o.rank] = o;
  }
  ASSERT_EQ(by_rank.size(), 2u);
  for (auto& [rank, o] : by_rank) {
    EXPECT_EQ(o.gang_size, 2);
    EXPECT_EQ(o.job_id, job);
    EXPECT_EQ(o.master_addr, by_rank[0].master_addr);
    EXPECT_EQ(o.master_port, by_rank[0].master_port);
    EXPECT_GE(o.master_port, 20000);
  }
  // The master is rank 0's node, by its registered address.
  std::string rank0_node;
  for (auto [name, reg] : {std::pair{"n1", r1}, {"n2", r2}, {"n3", r3}})
    if (reg.node_id == plan.assignments[0].node_id) rank0_node = name;
  ASSERT_FALSE(rank0_node.empty());
  EXPECT_EQ(by_rank[0].master_addr, "10.0.0." + rank0_node.substr(1));
}

TEST_F(GangStoreTest, ALargerGangThanTheNodesWaitsAndNeverStartsInPart) {
  Register("n1");
  Register("n2");
  model::JobId job = SubmitGang(3, 4);
  model::Plan plan = Decide();
  EXPECT_TRUE(plan.assignments.empty());
  ASSERT_TRUE(store_->ApplyPlan(plan).ok());
  EXPECT_EQ(State(job), model::JobState::kPending);
  EXPECT_EQ(Count("SELECT count(*) FROM attempts"), 0);
}

TEST_F(GangStoreTest, APlanWhosePartLostItsNodeStartsNothing) {
  Register("n1");
  Register("n2");
  model::JobId job = SubmitGang(2, 4);
  model::Plan plan = Decide();
  ASSERT_EQ(plan.assignments.size(), 2u);
  // One node goes between the snapshot and the apply: the other part must not start alone.
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE((*conn)->Exec("expire", "UPDATE nodes SET lease_expires_at = now() WHERE id = $1",
                            {std::to_string(plan.assignments[1].node_id)})
                  .ok());
  EXPECT_EQ(*store_->ApplyPlan(plan), 0);
  EXPECT_EQ(State(job), model::JobState::kPending);
  EXPECT_EQ(Count("SELECT count(*) FROM attempts"), 0);
}

TEST_F(GangStoreTest, APartThatFailsStopsItsPeersAndTheGangRetriesOnceAllHaveEnded) {
  auto r1 = Register("n1"), r2 = Register("n2");
  model::JobId job = SubmitGang(2, 4);
  ASSERT_EQ(*store_->ApplyPlan(Decide()), 1);
  std::map<std::string, AttemptOrder> on;
  for (auto [name, reg] : {std::pair{"n1", r1}, {"n2", r2}})
    on[name] = Beat(name, reg.lease_epoch).assignments.at(0);
  const auto a1 = on["n1"].attempt_id, a2 = on["n2"].attempt_id;
  // n2's part crashes; n1's part is told to stop at its next heartbeat.
  ASSERT_TRUE(store_->FinishAttempt(a2, r2.lease_epoch, Outcome::kFailed, 3, AuthOf(a2)).ok());
  EXPECT_EQ(State(job), model::JobState::kRunning) << "a part is still live";
  auto stops = Beat("n1", r1.lease_epoch, {a1}).stops;
  ASSERT_EQ(stops.size(), 1u);
  EXPECT_EQ(stops[0].attempt_id, a1);
  EXPECT_EQ(stops[0].reason, protocol::StopReason::kPreempted);
  // The last part ends: the gang ends as its worst part did (a failure, retried).
  ASSERT_TRUE(store_->FinishAttempt(a1, r1.lease_epoch, Outcome::kPreempted, std::nullopt,
                                    AuthOf(a1))
                  .ok());
  auto d = store_->GetJob(job, std::nullopt);
  EXPECT_EQ(d->job.state, model::JobState::kPending);
  EXPECT_NE(d->job.reason.find("exit 3"), std::string::npos) << d->job.reason;
  EXPECT_EQ(Count("SELECT failures FROM jobs WHERE id = " + std::to_string(job)), 1);
}

TEST_F(GangStoreTest, ALostNodeRequeuesTheGangOnlyAfterItsOtherPartStopped) {
  auto r1 = Register("n1"), r2 = Register("n2");
  model::JobId job = SubmitGang(2, 4);
  ASSERT_EQ(*store_->ApplyPlan(Decide()), 1);
  const auto a1 = Beat("n1", r1.lease_epoch).assignments.at(0).attempt_id;
  const auto a2 = Beat("n2", r2.lease_epoch).assignments.at(0).attempt_id;
  Beat("n1", r1.lease_epoch, {a1});
  // n2 restarts: its part is lost. The job must not go pending while n1's part still runs
  // (its rank would then have two live copies once it is placed again).
  ASSERT_EQ(Register("n2").attempts_lost, 1);
  EXPECT_EQ(State(job), model::JobState::kRunning);
  auto stops = Beat("n1", r1.lease_epoch, {a1}).stops;
  ASSERT_EQ(stops.size(), 1u);
  ASSERT_TRUE(store_->FinishAttempt(a1, r1.lease_epoch, Outcome::kPreempted, std::nullopt,
                                    AuthOf(a1))
                  .ok());
  auto d = store_->GetJob(job, std::nullopt);
  EXPECT_EQ(d->job.state, model::JobState::kPending);
  EXPECT_NE(d->job.reason.find("lost"), std::string::npos) << d->job.reason;
  EXPECT_EQ(Count("SELECT failures FROM jobs WHERE id = " + std::to_string(job)), 0)
      << "a lost node is not the job's failure";
  (void)a2;
}

TEST_F(GangStoreTest, EveryPartSucceedingSucceedsTheJobOnceAndOnlyRankZeroCheckpoints) {
  auto r1 = Register("n1"), r2 = Register("n2");
  model::JobId job = SubmitGang(2, 4);
  ASSERT_EQ(*store_->ApplyPlan(Decide()), 1);
  std::map<int, std::pair<AttemptOrder, Registration>> by_rank;
  for (auto [name, reg] : {std::pair{"n1", r1}, {"n2", r2}}) {
    auto o = Beat(name, reg.lease_epoch).assignments.at(0);
    by_rank[o.rank] = {o, reg};
  }
  auto& [o0, reg0] = by_rank[0];
  auto& [o1, reg1] = by_rank[1];
  CheckpointReport from1{o1.attempt_id, reg1.lease_epoch, 5, 0.5, "file:///ck/5", 10};
  EXPECT_EQ(store_->CommitCheckpoint(from1, AuthOf(o1.attempt_id)).code(),
            StatusCode::kFailedPrecondition);
  CheckpointReport from0{o0.attempt_id, reg0.lease_epoch, 5, 0.5, "file:///ck/5", 10};
  EXPECT_TRUE(store_->CommitCheckpoint(from0, AuthOf(o0.attempt_id)).ok());

  ASSERT_TRUE(store_->FinishAttempt(o1.attempt_id, reg1.lease_epoch, Outcome::kSucceeded, 0,
                                    AuthOf(o1.attempt_id))
                  .ok());
  EXPECT_EQ(State(job), model::JobState::kRunning);
  // A peer that succeeded stops nobody: rank 0 is still finishing its own work.
  const std::string node0 = reg0.node_id == r1.node_id ? "n1" : "n2";
  EXPECT_TRUE(Beat(node0, reg0.lease_epoch, {o0.attempt_id}).stops.empty());
  ASSERT_TRUE(store_->FinishAttempt(o0.attempt_id, reg0.lease_epoch, Outcome::kSucceeded, 0,
                                    AuthOf(o0.attempt_id))
                  .ok());
  EXPECT_EQ(State(job), model::JobState::kSucceeded);
  EXPECT_EQ(Count("SELECT count(*) FROM job_events WHERE to_state = 'succeeded' AND job_id = " +
                  std::to_string(job)),
            1);
  // Each part is billed for its own GPUs.
  EXPECT_EQ(Count("SELECT count(*) FROM attempts WHERE billed AND job_id = " +
                  std::to_string(job)),
            2);
}

TEST_F(GangStoreTest, TheDatabaseRefusesTwoLiveCopiesOfOneRank) {
  Register("n1");
  model::JobId job = SubmitGang(2, 2);
  const std::string node = std::to_string(NodeIdOf("n1"));
  auto conn = PgConn::Connect(conninfo_);
  auto insert = [&](int number, int rank) {
    return (*conn)->Exec("part_" + std::to_string(number) + "_" + std::to_string(rank),
                         "INSERT INTO attempts (job_id, number, rank, gang_size, node_id, gpus,"
                         " lease_epoch) VALUES ($1, $2, $3, 2, $4, 2, 1)",
                         {std::to_string(job), std::to_string(number), std::to_string(rank), node});
  };
  ASSERT_TRUE(insert(1, 0).ok());
  ASSERT_TRUE(insert(1, 1).ok());
  auto again = insert(2, 1);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), StatusCode::kConflict);
}

}  // namespace
}  // namespace frugal::store
