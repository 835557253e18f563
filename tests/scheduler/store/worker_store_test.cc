// The worker protocol's store side against a real PostgreSQL: leases, fencing, delivery,
// checkpoints, outcomes and the lost-node sweep.
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class WorkerStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(store_->UpsertPool(testing::A100Pool("spot", model::CapacityKind::kSpot, 0)).ok());
  }

  Registration Register(const std::string& name, Seconds ttl = Seconds(60)) {
    // As a restarted worker that kept its node credential: the node's own id, once it has one.
    const model::NodeId id = NodeIdOf(name);
    auto r = store_->RegisterWorker(testing::A100Node(name, 4), "spot", ttl,
                                    id ? std::optional<model::NodeId>(id) : std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *r;
  }

  model::JobId Submit(int max_attempts = 3) {
    SubmitRequest r;
    r.spec.command = {"train"};
    r.spec.max_attempts = max_attempts;
    return store_->Submit(admin_, r)->job.id;
  }

  // One scheduling cycle with the fifo policy.
  void Cycle() {
    ASSERT_TRUE(store_->SweepLostNodes().ok());
    auto snap = store_->LoadSnapshot({100, 100});
    ASSERT_TRUE(snap.ok());
    ASSERT_TRUE(store_->ApplyPlan(policy::FifoPolicy().Decide(*snap)).ok());
  }

  HeartbeatReply Beat(const std::string& node, std::int64_t epoch,
                      std::vector<model::AttemptId> running = {}) {
    HeartbeatRequest hb;
    hb.node = node;
    hb.lease_epoch = epoch;
    hb.node_id = NodeIdOf(hb.node);
    hb.running = std::move(running);
    auto r = store_->Heartbeat(hb, Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HeartbeatReply{};
  }

  model::JobState State(model::JobId id) { return store_->GetJob(id, std::nullopt)->job.state; }
};

TEST_F(WorkerStoreTest, AssignmentIsDeliveredUntilAcknowledgedThenNeverAgain) {
  auto reg = Register("w1");
  model::JobId job = Submit();
  Cycle();
  // a. The first heartbeat carries the assignment.
  auto first = Beat("w1", reg.lease_epoch);
  ASSERT_EQ(first.assignments.size(), 1u);
  EXPECT_EQ(first.assignments[0].job_id, job);
  EXPECT_EQ(first.assignments[0].resume_from, "");
  // b. A lost reply: the next heartbeat without it in `running` gets it again.
  EXPECT_EQ(Beat("w1", reg.lease_epoch).assignments.size(), 1u);
  // c. Once reported running it is acknowledged and not re-sent.
  const auto attempt = first.assignments[0].attempt_id;
  EXPECT_TRUE(Beat("w1", reg.lease_epoch, {attempt}).assignments.empty());
  EXPECT_TRUE(Beat("w1", reg.lease_epoch, {}).assignments.empty());
}

TEST_F(WorkerStoreTest, StaleEpochIsRefusedAndStaleAttemptsAreStopped) {
  auto old_reg = Register("w1");
  Submit();
  Cycle();
  auto attempt = Beat("w1", old_reg.lease_epoch).assignments.at(0).attempt_id;
  // The worker restarts: its old attempt ends node_lost, the old epoch is refused.
  auto new_reg = Register("w1");
  EXPECT_EQ(new_reg.attempts_lost, 1);
  EXPECT_GT(new_reg.lease_epoch, old_reg.lease_epoch);
  HeartbeatRequest hb;
  hb.node = "w1";
  hb.lease_epoch = old_reg.lease_epoch;
  hb.node_id = NodeIdOf(hb.node);
  EXPECT_EQ(store_->Heartbeat(hb, Seconds(60)).status().code(), StatusCode::kConflict);
  // Reports fenced by the old attempt are refused too (but a finished result: decision 0019).
  EXPECT_EQ(store_->AppendLog(attempt, old_reg.lease_epoch, "x", 100, AuthOf(attempt)).code(),
            StatusCode::kConflict);
  EXPECT_EQ(store_->FinishAttempt(attempt, old_reg.lease_epoch, Outcome::kPreempted, 0, AuthOf(attempt))
                .status()
                .code(),
            StatusCode::kConflict);
  // If the new incarnation claims the old attempt, it is told to kill it.
  auto reply = Beat("w1", new_reg.lease_epoch, {attempt});
  ASSERT_EQ(reply.stops.size(), 1u);
  EXPECT_EQ(reply.stops[0].reason, protocol::StopReason::kStale);
}

TEST_F(WorkerStoreTest, CheckpointsOnlyMoveForward) {
  auto reg = Register("w1");
  model::JobId job = Submit();
  Cycle();
  auto attempt = Beat("w1", reg.lease_epoch).assignments.at(0).attempt_id;
  CheckpointReport r{attempt, reg.lease_epoch, 10, 0.1, "file:///ckpt/10", 100};
  ASSERT_TRUE(store_->CommitCheckpoint(r, AuthOf(r.attempt_id)).ok());
  r.step = 10;
  EXPECT_EQ(store_->CommitCheckpoint(r, AuthOf(r.attempt_id)).field(), "step");  // not above 10
  r.step = 5;
  EXPECT_EQ(store_->CommitCheckpoint(r, AuthOf(r.attempt_id)).code(), StatusCode::kFailedPrecondition);
  r.step = 20;
  r.uri = "file:///ckpt/20";
  ASSERT_TRUE(store_->CommitCheckpoint(r, AuthOf(r.attempt_id)).ok());
  r.lease_epoch += 1;
  r.step = 30;
  EXPECT_EQ(store_->CommitCheckpoint(r, AuthOf(r.attempt_id)).code(), StatusCode::kConflict);  // wrong epoch
  EXPECT_EQ(store_->GetJob(job, std::nullopt)->latest_checkpoint->step, 20);
}

TEST_F(WorkerStoreTest, PreemptedJobResumesFromItsCheckpointWithoutUsingAnAttempt) {
  auto reg = Register("w1");
  model::JobId job = Submit(/*max_attempts=*/1);
  Cycle();
  auto attempt = Beat("w1", reg.lease_epoch).assignments.at(0).attempt_id;
  ASSERT_TRUE(store_->CommitCheckpoint({attempt, reg.lease_epoch, 7, 0.7, "file:///c/7", 1}, AuthOf(attempt)).ok());
  auto after = store_->FinishAttempt(attempt, reg.lease_epoch, Outcome::kPreempted, std::nullopt, AuthOf(attempt));
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->state, model::JobState::kPending);
  Cycle();
  auto next = Beat("w1", reg.lease_epoch).assignments;
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].number, 2);
  EXPECT_EQ(next[0].resume_from, "file:///c/7");
  EXPECT_EQ(*next[0].resume_step, 7);
  // max_attempts = 1 and one preemption: the job may still succeed.
  ASSERT_TRUE(store_->FinishAttempt(next[0].attempt_id, reg.lease_epoch, Outcome::kSucceeded, 0, AuthOf(next[0].attempt_id)).ok());
  EXPECT_EQ(State(job), model::JobState::kSucceeded);
}

TEST_F(WorkerStoreTest, FailuresRetryWithBackoffThenFailForGood) {
  auto reg = Register("w1");
  model::JobId job = Submit(/*max_attempts=*/2);
  Cycle();
  auto attempt = Beat("w1", reg.lease_epoch).assignments.at(0).attempt_id;
  auto first = store_->FinishAttempt(attempt, reg.lease_epoch, Outcome::kFailed, 3, AuthOf(attempt));
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->state, model::JobState::kPending);
  EXPECT_NE(first->reason.find("retry 2 of 2 after 5s backoff"), std::string::npos) << first->reason;
  // During the backoff the job is not placed.
  Cycle();
  EXPECT_TRUE(Beat("w1", reg.lease_epoch).assignments.empty());
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE((*conn)->ExecScript("UPDATE jobs SET not_before = now() - interval '1 s'").ok());
  Cycle();
  auto second = Beat("w1", reg.lease_epoch).assignments;
  ASSERT_EQ(second.size(), 1u);
  auto last = store_->FinishAttempt(second[0].attempt_id, reg.lease_epoch, Outcome::kFailed, 3, AuthOf(second[0].attempt_id));
  EXPECT_EQ(last->state, model::JobState::kFailed);
  EXPECT_EQ(store_->GetJob(job, std::nullopt)->attempts.size(), 2u);
}

TEST_F(WorkerStoreTest, ExpiredLeaseRequeuesTheJobs) {
  auto reg = Register("w1", Seconds(1));
  model::JobId job = Submit();
  Cycle();
  auto attempt = Beat("w1", reg.lease_epoch).assignments.at(0).attempt_id;
  // Beat() renewed the lease for 60 s; shorten it to the past (database clock).
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE((*conn)->ExecScript("UPDATE nodes SET lease_expires_at = now() - interval '1 s'").ok());
  auto swept = store_->SweepLostNodes();
  ASSERT_TRUE(swept.ok());
  // The sweep names the node and what it ran there (the node_lost log line).
  ASSERT_EQ(swept->size(), 1u);
  EXPECT_EQ(swept->at(0).name, "w1");
  EXPECT_EQ(swept->at(0).attempts, std::vector<model::AttemptId>{attempt});
  EXPECT_EQ(swept->at(0).jobs, std::vector<model::JobId>{job});
  auto d = store_->GetJob(job, std::nullopt);
  EXPECT_EQ(d->job.state, model::JobState::kPending);
  EXPECT_EQ(d->attempts.at(0).end_reason, "node_lost");
  // The lost worker's late checkpoint or preemption is refused (a late result that the
  // job finished is taken: worker_fence_test.cc).
  EXPECT_EQ(store_->CommitCheckpoint({attempt, reg.lease_epoch, 5, 0.5, "file:///c/5", 1},
                                     AuthOf(attempt)).code(),
            StatusCode::kConflict);
  EXPECT_EQ(store_->FinishAttempt(attempt, reg.lease_epoch, Outcome::kPreempted, 0, AuthOf(attempt)).status().code(),
            StatusCode::kConflict);
  HeartbeatRequest hb{reg.node_id, "w1", reg.lease_epoch, {}, "[]", false};
  EXPECT_EQ(store_->Heartbeat(hb, Seconds(60)).status().code(), StatusCode::kConflict);
}

TEST_F(WorkerStoreTest, NoticeDrainsTheNodeAndCancelBecomesAStopOrder) {
  auto reg = Register("w1");
  model::JobId job = Submit();
  Cycle();
  auto attempt = Beat("w1", reg.lease_epoch).assignments.at(0).attempt_id;
  ASSERT_TRUE(store_->CancelJob(job, std::nullopt, "admin").ok());
  auto reply = Beat("w1", reg.lease_epoch, {attempt});
  ASSERT_EQ(reply.stops.size(), 1u);
  EXPECT_EQ(reply.stops[0].reason, protocol::StopReason::kCancelled);
  ASSERT_TRUE(store_->FinishAttempt(attempt, reg.lease_epoch, Outcome::kCancelled, -15, AuthOf(attempt)).ok());
  EXPECT_EQ(State(job), model::JobState::kCancelled);
  // A node under notice gets no new work.
  HeartbeatRequest hb{reg.node_id, "w1", reg.lease_epoch, {}, "[]", true};
  ASSERT_TRUE(store_->Heartbeat(hb, Seconds(60)).ok());
  Submit();
  Cycle();
  EXPECT_TRUE(store_->LoadSnapshot({10, 10})->nodes.empty());
}

TEST_F(WorkerStoreTest, LogsAreKeptUpToTheCap) {
  auto reg = Register("w1");
  model::JobId job = Submit();
  Cycle();
  auto attempt = Beat("w1", reg.lease_epoch).assignments.at(0).attempt_id;
  ASSERT_TRUE(store_->AppendLog(attempt, reg.lease_epoch, "hello ", 10, AuthOf(attempt)).ok());
  ASSERT_TRUE(store_->AppendLog(attempt, reg.lease_epoch, "world!", 10, AuthOf(attempt)).ok());  // 12 > 10
  auto chunks = store_->ReadLogs(job, std::nullopt, 0, 100);
  ASSERT_TRUE(chunks.ok());
  ASSERT_EQ(chunks->size(), 1u);
  EXPECT_EQ((*chunks)[0].data, "hello ");
  EXPECT_EQ(store_->AppendLog(attempt, reg.lease_epoch + 1, "x", 10, AuthOf(attempt)).code(), StatusCode::kConflict);
}

// A batch takes its common reports (live single-node attempts of this node, decision 0037)
// in one pass: the job, the attempt, the events, the logs and the ledger come out as the
// report-by-report path writes them, and a second report of the same attempt in the batch
// is refused as a report sent again would be.
TEST_F(WorkerStoreTest, ABatchFinishesCommonReportsAsReportByReportWould) {
  auto reg = Register("w1");
  std::vector<model::JobId> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(Submit());
  Cycle();
  std::map<model::JobId, AttemptOrder> order;
  for (const auto& o : Beat("w1", reg.lease_epoch).assignments) order[o.job_id] = o;
  ASSERT_EQ(order.size(), 4u);
  // Jobs 0 and 2 one by one, 1 and 3 in one batch: a success, and a failure with output.
  const AttemptOrder& one = order[jobs[0]];
  const AttemptOrder& three = order[jobs[2]];
  ASSERT_TRUE(store_->FinishAttempt(one.attempt_id, reg.lease_epoch, Outcome::kSucceeded, 0,
                                    AuthOf(one.attempt_id))
                  .ok());
  ASSERT_TRUE(store_->AppendLog(three.attempt_id, reg.lease_epoch, "boom\n", 1 << 20,
                                AuthOf(three.attempt_id))
                  .ok());
  ASSERT_TRUE(store_->FinishAttempt(three.attempt_id, reg.lease_epoch, Outcome::kFailed, 3,
                                    AuthOf(three.attempt_id))
                  .ok());
  auto report = [&](model::JobId job, Outcome outcome, int code, const std::string& log) {
    const AttemptOrder& o = order[job];
    return FinishReport{o.attempt_id, reg.lease_epoch, o.fence, outcome, code, log};
  };
  auto batch = store_->FinishAttempts({report(jobs[1], Outcome::kSucceeded, 0, ""),
                                       report(jobs[3], Outcome::kFailed, 3, "boom\n"),
                                       report(jobs[1], Outcome::kSucceeded, 0, "")},
                                      1 << 20, {NodeIdOf("w1"), ""});
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->size(), 3u);
  EXPECT_TRUE((*batch)[0].status.ok()) << (*batch)[0].status.ToString();
  EXPECT_EQ((*batch)[0].job_id, jobs[1]);
  EXPECT_EQ((*batch)[0].state, model::JobState::kSucceeded);
  EXPECT_TRUE((*batch)[1].status.ok()) << (*batch)[1].status.ToString();
  EXPECT_EQ((*batch)[1].state, model::JobState::kPending);  // retried after a backoff
  EXPECT_EQ((*batch)[2].status.code(), StatusCode::kConflict) << (*batch)[2].status.ToString();
  // Row by row, each batched job as its report-by-report twin (names and ids aside).
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  auto row = [&](model::JobId job) {
    auto r = (*conn)->Exec(
        "twin_" + std::to_string(job),
        "SELECT j.state || '|' || j.reason || '|' || j.failures || '|' ||"
        " (j.not_before IS NOT NULL) || '|' || (j.finished_at IS NOT NULL) || '|' ||"
        " a.end_reason || '|' || coalesce(a.exit_code::text, '-') || '|' ||"
        " (a.acked_at IS NOT NULL) || '|' || a.billed || '|' || a.log_bytes || '|' ||"
        " (a.ended_at >= a.started_at) || '|' ||"
        " (SELECT count(*) FROM attempt_logs l WHERE l.attempt_id = a.id) || '|' ||"
        " (SELECT string_agg(e.kind || ':' || coalesce(e.from_state, '') || '>' ||"
        "   coalesce(e.to_state, '') || ':' || coalesce(e.message, ''), ';' ORDER BY e.id)"
        "   FROM job_events e WHERE e.job_id = j.id) || '|' ||"
        " (SELECT string_agg(le.kind || ':' || le.gpus || ':' || le.capacity_kind, ';'"
        "   ORDER BY le.kind) FROM ledger_entries le WHERE le.attempt_id = a.id)"
        " FROM jobs j JOIN attempts a ON a.job_id = j.id WHERE j.id = $1",
        {std::to_string(job)});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && r->rows() == 1 ? r->Text(0, 0) : std::string("missing");
  };
  EXPECT_EQ(row(jobs[1]), row(jobs[0]));
  EXPECT_EQ(row(jobs[3]), row(jobs[2]));
  EXPECT_NE(row(jobs[1]), row(jobs[3]));  // the comparison sees what differs
}

}  // namespace
}  // namespace frugal::store
