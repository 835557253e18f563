// Multi-node gangs against a real PostgreSQL (decision 0032): the cost policy places a gang
// on distinct nodes, the store starts it all or nothing, tells each part its rank and
// master, stops the rest when one part ends badly, and moves the job once, when the last
// part has ended.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/store/pg/pg_conn.h"
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
    auto snap = store_->LoadSnapshot({100, 100});
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
  // The parts of the gang just started on n1 and n2 (registered as r1, r2), by rank, as
  // their nodes' heartbeats deliver them; `ack`: their workers then report them running.
  using ByRank = std::map<int, std::pair<AttemptOrder, Registration>>;
  ByRank PartsOnTwoNodes(const Registration& r1, const Registration& r2, bool ack) {
    ByRank by_rank;
    for (auto [name, reg] : {std::pair{"n1", r1}, {"n2", r2}}) {
      auto o = Beat(name, reg.lease_epoch).assignments.at(0);
      if (ack) Beat(name, reg.lease_epoch, {o.attempt_id});
      by_rank[o.rank] = {o, reg};
    }
    return by_rank;
  }

  // Of `job`: its billed attempts (parts), and its lost-work ledger entries.
  std::int64_t Billed(model::JobId job) {
    return Count("SELECT count(*) FROM attempts WHERE billed AND job_id = " + std::to_string(job));
  }
  std::int64_t LostEntries(model::JobId job) {
    return Count("SELECT count(*) FROM ledger_entries WHERE kind = 'lost_work' AND job_id = " +
                 std::to_string(job));
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
  ASSERT_EQ(store_->ApplyPlan(plan)->started, 1) << "one job started";
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

// Two live gangs whose masters share a node never share a rendezvous port: the port is
// chosen when the gang starts, among those no live gang mastered there holds. (It was a
// hash of the job and attempt: the port below, which the other gangs already hold.)
TEST_F(GangStoreTest, GangsMasteredOnOneNodeNeverShareARendezvousPort) {
  auto r1 = Register("n1", 8), r2 = Register("n2", 8);
  model::JobId job = SubmitGang(2, 1);
  const int hashed = 20000 + static_cast<int>((job * 1000003 + 1) % 10000);
  // Gangs already live on both nodes, each master holding the port the hash gives `job`.
  auto conn = PgConn::Connect(conninfo_);
  for (const std::string node : {"n1", "n2"}) {
    model::JobId other = SubmitGang(2, 1);
    for (int rank = 0; rank < 2; ++rank) {
      const std::string on = rank == 0 ? node : (node == "n1" ? "n2" : "n1");
      ASSERT_TRUE((*conn)->Exec("live_part_" + node + std::to_string(rank),
                                "INSERT INTO attempts (job_id, team_id, number, rank,"
                                " gang_size, node_id, gpus, lease_epoch, master_port)"
                                " SELECT $1, team_id, 1, $2, 2, $3, 1, 1, $4 FROM jobs"
                                " WHERE id = $1",
                                {std::to_string(other), std::to_string(rank),
                                 std::to_string(NodeIdOf(on)), std::to_string(hashed)})
                      .ok());
    }
    ASSERT_TRUE((*conn)->ExecScript("UPDATE jobs SET state = 'running', attempt_count = 1"
                                    " WHERE id = " + std::to_string(other)).ok());
  }
  ASSERT_EQ(store_->ApplyPlan(Decide())->started, 1);
  std::set<int> ports;
  for (auto [name, reg] : {std::pair{"n1", r1}, {"n2", r2}})
    for (auto& o : Beat(name, reg.lease_epoch).assignments)
      if (o.job_id == job) ports.insert(o.master_port);
  ASSERT_EQ(ports.size(), 1u) << "every part is told one port";
  EXPECT_NE(*ports.begin(), hashed);
  EXPECT_GE(*ports.begin(), 20000);
  EXPECT_LT(*ports.begin(), 30000);

  // Two new gangs started in one plan, both mastered on n3, get two ports.
  auto r3 = Register("n3", 8), r4 = Register("n4", 8);
  model::JobId g1 = SubmitGang(2, 1), g2 = SubmitGang(2, 1);
  model::Plan both;
  for (model::JobId g : {g1, g2})
    for (model::NodeId n : {r3.node_id, r4.node_id})  // plan order: rank 0 on n3
      both.assignments.push_back({g, n, 1, "placed", 0});
  ASSERT_EQ(store_->ApplyPlan(both)->started, 2);
  const std::string gangs = "(" + std::to_string(g1) + ", " + std::to_string(g2) + ")";
  EXPECT_EQ(Count("SELECT count(DISTINCT node_id) FROM attempts WHERE rank = 0 AND job_id IN " +
                  gangs),
            1);
  EXPECT_EQ(Count("SELECT count(DISTINCT master_port) FROM attempts WHERE job_id IN " + gangs),
            2);
  EXPECT_EQ(Count("SELECT count(*) FROM (SELECT node_id, master_port FROM attempts WHERE"
                  " rank = 0 AND gang_size > 1 AND ended_at IS NULL GROUP BY 1, 2"
                  " HAVING count(*) > 1) clash"),
            0);
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
  EXPECT_EQ(store_->ApplyPlan(plan)->started, 0);
  EXPECT_EQ(State(job), model::JobState::kPending);
  EXPECT_EQ(Count("SELECT count(*) FROM attempts"), 0);
}

TEST_F(GangStoreTest, APartThatFailsStopsItsPeersAndTheGangRetriesOnceAllHaveEnded) {
  auto r1 = Register("n1"), r2 = Register("n2");
  model::JobId job = SubmitGang(2, 4);
  ASSERT_EQ(store_->ApplyPlan(Decide())->started, 1);
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
  // The job's own failure wasted nothing of the capacity's: the peer it stopped included.
  EXPECT_EQ(Billed(job), 2);
  EXPECT_EQ(LostEntries(job), 0);
}

// The ledger's wasted work for a gang (decision 0032): rank 0's checkpoint holds every
// rank's state, so when the gang is reclaimed (or preempted) each part loses what it did
// since that checkpoint, rank 1's crash when its peer vanished included. The parts are
// billed once the last has ended, when the gang's end is known. The dashboard's
// interruptions list both parts, the crashed rank with the gang's cause.
class GangLossTest : public GangStoreTest {
 protected:
  // Starts a 2-node gang, checkpoints, stops rank 0 (a reclaim; with `stop_kind`, the
  // scheduler's stop order of that kind) and crashes rank 1; checks the ledger and returns
  // the job's interruptions by end reason.
  std::map<std::string, Interruption> StopRankZeroThenRankOneCrashes(
      const std::string& stop_kind) {
    auto r1 = Register("n1"), r2 = Register("n2");
    model::JobId job = SubmitGang(2, 4);
    EXPECT_EQ(store_->ApplyPlan(Decide())->started, 1);
    ByRank by_rank = PartsOnTwoNodes(r1, r2, /*ack=*/true);
    auto& [o0, reg0] = by_rank[0];
    auto& [o1, reg1] = by_rank[1];
    CheckpointReport ck{o0.attempt_id, reg0.lease_epoch, 5, 0.5, "file:///ck/5", 10};
    EXPECT_TRUE(store_->CommitCheckpoint(ck, AuthOf(o0.attempt_id)).ok());
    if (!stop_kind.empty()) {
      auto conn = PgConn::Connect(conninfo_);
      EXPECT_TRUE(conn.ok() && (*conn)->Exec("order_stop", "UPDATE attempts SET stop_reason ="
                                             " 'preempted', stop_kind = $2 WHERE id = $1",
                                             {std::to_string(o0.attempt_id), stop_kind})
                                   .ok());
    }
    // Rank 0 stops. Not billed while rank 1 runs.
    EXPECT_TRUE(store_->FinishAttempt(o0.attempt_id, reg0.lease_epoch, Outcome::kPreempted,
                                      std::nullopt, AuthOf(o0.attempt_id))
                    .ok());
    EXPECT_EQ(Billed(job), 0);
    // Rank 1's program crashes when its peer goes.
    EXPECT_TRUE(store_->FinishAttempt(o1.attempt_id, reg1.lease_epoch, Outcome::kFailed, 1,
                                      AuthOf(o1.attempt_id))
                    .ok());
    EXPECT_EQ(State(job), model::JobState::kPending);
    EXPECT_EQ(Billed(job), 2);
    // One lost-work entry per part, each from the gang's checkpoint to the part's end.
    EXPECT_EQ(Count("SELECT count(*) FROM ledger_entries l JOIN attempts a ON a.id ="
                    " l.attempt_id WHERE l.kind = 'lost_work' AND l.ended_at = a.ended_at"
                    " AND l.started_at = (SELECT max(created_at) FROM checkpoints WHERE"
                    " job_id = a.job_id) AND l.started_at > a.started_at AND l.job_id = " +
                    std::to_string(job)),
              2);
    EXPECT_EQ(LostEntries(job), 2);
    std::map<std::string, Interruption> by_reason;
    auto recent = store_->RecentInterruptions(std::nullopt, 20);
    EXPECT_TRUE(recent.ok());
    if (recent.ok())
      for (const auto& x : *recent)
        if (x.job == job) by_reason[x.reason] = x;
    return by_reason;
  }
};

TEST_F(GangLossTest, AReclaimedGangLosesEachPartsWorkSinceRankZerosCheckpoint) {
  auto by_reason = StopRankZeroThenRankOneCrashes("");
  ASSERT_EQ(by_reason.size(), 2u);
  ASSERT_TRUE(by_reason.count("preempted") && by_reason.count("failed"));
  EXPECT_GT(by_reason["failed"].lost, 0);
  EXPECT_EQ(by_reason["failed"].cause, "node");
  EXPECT_EQ(by_reason["failed"].attempt, by_reason["preempted"].attempt);
}

TEST_F(GangLossTest, APreemptedGangsCrashedRankShowsTheGangsCause) {
  auto by_reason = StopRankZeroThenRankOneCrashes("priority_preemption");
  ASSERT_EQ(by_reason.size(), 2u);
  EXPECT_EQ(by_reason["preempted"].cause, "priority");
  EXPECT_EQ(by_reason["failed"].cause, "priority");  // the gang's, not its own (none)
  EXPECT_GT(by_reason["failed"].lost, 0);
}

TEST_F(GangStoreTest, ALostNodeRequeuesTheGangOnlyAfterItsOtherPartStopped) {
  auto r1 = Register("n1"), r2 = Register("n2");
  model::JobId job = SubmitGang(2, 4);
  ASSERT_EQ(store_->ApplyPlan(Decide())->started, 1);
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
  ASSERT_EQ(store_->ApplyPlan(Decide())->started, 1);
  ByRank by_rank = PartsOnTwoNodes(r1, r2, /*ack=*/false);
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
  EXPECT_EQ(Billed(job), 2);
}

TEST_F(GangStoreTest, TheDatabaseRefusesTwoLiveCopiesOfOneRank) {
  Register("n1");
  model::JobId job = SubmitGang(2, 2);
  const std::string node = std::to_string(NodeIdOf("n1"));
  auto conn = PgConn::Connect(conninfo_);
  auto insert = [&](int number, int rank) {
    return (*conn)->Exec("part_" + std::to_string(number) + "_" + std::to_string(rank),
                         "INSERT INTO attempts (job_id, team_id, number, rank, gang_size,"
                         " node_id, gpus, lease_epoch) SELECT $1, team_id, $2, $3, 2, $4, 2,"
                         " 1 FROM jobs WHERE id = $1",
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
