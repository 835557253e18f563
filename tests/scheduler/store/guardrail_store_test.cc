// Guardrails against a real PostgreSQL: settings round trip, approval holds (approve,
// cancel while held), heartbeat samples (peak memory, idle_since in database time, unknown
// never idle), idle warnings once and idle requeue/stop orders (the reclaimer working from
// the cycle's snapshot; each stop shown as one in the job's history, the interruptions and
// the metrics), and right-sizing input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "scheduler/policy/cycle.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/policy/guardrails/guardrails.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class GuardrailStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("a100-od", model::CapacityKind::kOnDemand, 3'000'000))
            .ok());
    epoch_ = store_->RegisterWorker(testing::A100Node("w1", 4), "a100-od", Seconds(60), std::nullopt)->lease_epoch;
  }

  // Submits, places with one fifo cycle and acknowledges: returns the running attempt.
  std::pair<model::JobId, model::AttemptId> Running() {
    SubmitRequest r;
    r.spec.command = {"train"};
    auto job = store_->Submit(admin_, r)->job.id;
    auto snap = store_->LoadSnapshot({100, 100});
    EXPECT_TRUE(store_->ApplyPlan(policy::FifoPolicy().Decide(*snap)).ok());
    auto reply = Beat({});
    EXPECT_EQ(reply.assignments.size(), 1u);
    const auto attempt = reply.assignments.at(0).attempt_id;
    running_.push_back(attempt);
    return {job, attempt};
  }

  HeartbeatReply Beat(const nlohmann::json& usage) {
    HeartbeatRequest hb;
    hb.node = "w1";
    hb.lease_epoch = epoch_;
    hb.node_id = NodeIdOf(hb.node);
    hb.running = running_;
    hb.usage_json = usage.is_null() ? "[]" : usage.dump();
    auto r = store_->Heartbeat(hb, Seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : HeartbeatReply{};
  }

  // Moves the attempt's idle_since into the past, as if the samples had come that long ago.
  void Age(model::AttemptId attempt, int seconds) {
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Exec("age", "UPDATE attempts SET idle_since = idle_since - make_interval("
                              "secs => $2) WHERE id = $1",
                       {std::to_string(attempt), std::to_string(seconds)})
                    .ok());
  }

  // The idle attempts as the engine's reclaimer sees them: those of a cycle's snapshot.
  StatusOr<model::IdleBatch> LoadIdleAttempts() {
    ASSIGN_OR_RETURN(auto snap, store_->LoadSnapshot({100, 100}));
    return policy::IdleBatchOf(snap);
  }

  // Applies the idle guardrail's actions as a cycle does (a plan of nothing else); returns
  // the stop orders written, -1 on error.
  int ApplyIdle(const std::vector<model::IdleAction>& actions) {
    model::Plan plan;
    plan.idle_actions = actions;
    auto applied = store_->ApplyPlan(plan);
    EXPECT_TRUE(applied.ok()) << applied.status().ToString();
    return applied.ok() ? applied->idle_stops : -1;
  }

  // The attempt reports `utilization` % and has been idle for `seconds`: what the
  // guardrail decides about the idle attempts of the next cycle.
  std::vector<model::IdleAction> IdleFor(model::AttemptId attempt, int seconds, int utilization) {
    Beat({{{"attempt_id", attempt}, {"utilization", utilization}}});
    Age(attempt, seconds);
    auto batch = LoadIdleAttempts();
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    return batch.ok() ? policy::DecideIdle(*batch) : std::vector<model::IdleAction>{};
  }

  // The worker's side of a stop order: the next heartbeat brings it with `reason`, and the
  // attempt ends with `outcome`. The job as it ends.
  StatusOr<model::Job> WorkerStops(model::AttemptId attempt, const std::string& reason,
                                   Outcome outcome) {
    auto reply = Beat({});
    EXPECT_EQ(reply.stops.size(), 1u);
    if (!reply.stops.empty()) EXPECT_STREQ(protocol::ToString(reply.stops[0].reason), reason.c_str());
    return store_->FinishAttempt(attempt, epoch_, outcome, std::nullopt, AuthOf(attempt));
  }

  // An idle stop shows as one: the attempt's stop kind in the job's history and timeline,
  // its cause among the interruptions, and /metrics' idle stop count by action (and, for a
  // requeue, its preemption cause).
  void ExpectShownAsIdleStop(model::JobId job, const std::string& action,
                             const std::string& end_reason) {
    auto detail = store_->GetJob(job, std::nullopt);
    ASSERT_TRUE(detail.ok());
    ASSERT_EQ(detail->attempts.size(), 1u);
    EXPECT_EQ(detail->attempts[0].stop_kind, "idle_reclaim");
    auto timeline = store_->JobTimeline(job, std::nullopt);
    ASSERT_TRUE(timeline.ok());
    ASSERT_EQ(timeline->attempts.size(), 1u);
    EXPECT_EQ(timeline->attempts[0].stop_kind, "idle_reclaim");
    auto recent = store_->RecentInterruptions(std::nullopt, 20);
    ASSERT_TRUE(recent.ok());
    ASSERT_EQ(recent->size(), 1u);
    EXPECT_EQ((*recent)[0].reason, end_reason);
    EXPECT_EQ((*recent)[0].cause, "idle_reclaim");
    auto m = store_->LoadMetrics();
    ASSERT_TRUE(m.ok());
    ASSERT_EQ(m->idle_stops.size(), 1u);
    EXPECT_EQ(m->idle_stops[0].pool, "a100-od");
    EXPECT_EQ(m->idle_stops[0].reason, action);
    EXPECT_EQ(m->idle_stops[0].attempts, 1);
    if (end_reason == "preempted") {
      ASSERT_EQ(m->preempted.size(), 1u);
      EXPECT_EQ(m->preempted[0].reason, "idle_reclaim");  // not "node"
    } else {
      EXPECT_TRUE(m->preempted.empty());
    }
  }

  int Events(model::JobId job, const std::string& kind) {
    int n = 0;
    auto detail = store_->GetJob(job, std::nullopt);  // named: the loop must not outlive it
    if (!detail.ok()) return -1;
    for (const auto& e : detail->events) n += e.kind == kind;
    return n;
  }

  std::int64_t epoch_ = 0;
  std::vector<model::AttemptId> running_;
};

TEST_F(GuardrailStoreTest, SettingsAndTeamIdlePolicyRoundTrip) {
  auto defaults = store_->GetGuardrails();
  ASSERT_TRUE(defaults.ok()) << defaults.status().ToString();
  EXPECT_TRUE(defaults->premium_gpu_types.empty());  // approval off until configured
  EXPECT_EQ(defaults->idle_threshold_percent, 5);
  model::GuardrailSettings s = *defaults;
  s.runtimes["normal"] = {Seconds(3600), Seconds(86400)};
  s.runtimes["low"] = {std::nullopt, Seconds(600)};
  s.premium_gpu_types = {"a100", "h100"};
  s.approval_above_gpus = 4;
  s.idle_window = Seconds(120);
  ASSERT_TRUE(store_->SetGuardrails(s).ok());
  auto back = store_->GetGuardrails();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->runtimes.at("normal").default_max_runtime, Seconds(3600));
  EXPECT_FALSE(back->runtimes.at("low").default_max_runtime);
  EXPECT_EQ(back->premium_gpu_types, (std::vector<std::string>{"a100", "h100"}));
  EXPECT_EQ(back->idle_window, Seconds(120));
  // A default above the maximum breaks a constraint: refused, nothing changed.
  s.runtimes["normal"] = {Seconds(90000), Seconds(86400)};
  EXPECT_FALSE(store_->SetGuardrails(s).ok());
  EXPECT_EQ(store_->GetGuardrails()->runtimes.at("normal").default_max_runtime, Seconds(3600));

  EXPECT_EQ(*store_->GetTeamIdlePolicy("admin"), model::IdlePolicy::kWarn);
  ASSERT_TRUE(store_->SetTeamIdlePolicy("admin", model::IdlePolicy::kRequeue).ok());
  EXPECT_EQ(*store_->GetTeamIdlePolicy("admin"), model::IdlePolicy::kRequeue);
  EXPECT_EQ(store_->SetTeamIdlePolicy("nobody", model::IdlePolicy::kWarn).status().code(),
            StatusCode::kNotFound);
}

// Priority preemption's protection window is per class (issue 17): saved with the
// guardrails, and given to each running attempt in the snapshot by its job's class.
TEST_F(GuardrailStoreTest, ProtectionWindowComesWithTheJobsClass) {
  Running();  // a "normal" job, before any class setting
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->running.size(), 1u);
  EXPECT_FALSE(snap->running[0].min_run_time.has_value()) << "unset: the policy's default";
  model::GuardrailSettings s = *store_->GetGuardrails();
  s.runtimes["normal"].min_run_time = Seconds(120);
  s.runtimes["low"].min_run_time = Seconds(0);
  ASSERT_TRUE(store_->SetGuardrails(s).ok());
  auto back = store_->GetGuardrails();
  EXPECT_EQ(back->runtimes.at("normal").min_run_time, Seconds(120));
  EXPECT_EQ(back->runtimes.at("low").min_run_time, Seconds(0));
  EXPECT_FALSE(back->runtimes.at("low").default_max_runtime.has_value());
  snap = store_->LoadSnapshot({100, 100});
  ASSERT_EQ(snap->running.size(), 1u);
  EXPECT_EQ(snap->running[0].min_run_time, Seconds(120));
}

TEST_F(GuardrailStoreTest, HeldForApprovalUntilApprovedAndCancelStillWorks) {
  SubmitRequest r;
  r.spec.command = {"train"};
  r.spec.gpus = 16;
  r.approval_reason = "awaiting admin approval: 16 premium GPUs";
  auto held = store_->Submit(admin_, r);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  EXPECT_EQ(held->job.state, model::JobState::kHeld);
  EXPECT_EQ(held->job.reason, *r.approval_reason);
  // a. Cycles never place it: the snapshot has no pending job.
  EXPECT_TRUE(store_->LoadSnapshot({100, 100})->pending.empty());
  // b. Approve releases it to pending, once.
  auto approved = store_->ApproveJob(held->job.id, "admin");
  ASSERT_TRUE(approved.ok()) << approved.status().ToString();
  EXPECT_EQ(approved->state, model::JobState::kPending);
  EXPECT_EQ(Events(held->job.id, "approved"), 1);
  EXPECT_EQ(store_->ApproveJob(held->job.id, "admin").status().code(), StatusCode::kConflict);
  EXPECT_EQ(store_->ApproveJob(999999, "admin").status().code(), StatusCode::kNotFound);
  // c. Another held job is cancelled while held: cancelled, and no longer approvable.
  auto other = store_->Submit(admin_, r);
  ASSERT_TRUE(other.ok());
  auto cancelled = store_->CancelJob(other->job.id, std::nullopt, "admin");
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, model::JobState::kCancelled);
  EXPECT_EQ(store_->ApproveJob(other->job.id, "admin").status().code(), StatusCode::kConflict);
}

TEST_F(GuardrailStoreTest, HeartbeatsKeepPeakMemoryAndIdleSinceUnknownNeverIdle) {
  auto [job, attempt] = Running();
  // a. Unknown utilisation: not idle.
  Beat({{{"attempt_id", attempt}, {"memory_used_mb", 9000}}});
  EXPECT_TRUE(LoadIdleAttempts()->attempts.empty());
  // b. Under the threshold: idle since now; a higher peak is kept, a lower one is not.
  Beat({{{"attempt_id", attempt}, {"utilization", 2}, {"memory_used_mb", 11469}}});
  Beat({{{"attempt_id", attempt}, {"utilization", 0}, {"memory_used_mb", 100}}});
  auto batch = LoadIdleAttempts();
  ASSERT_TRUE(batch.ok());
  ASSERT_EQ(batch->attempts.size(), 1u);
  EXPECT_EQ(batch->attempts[0].attempt_id, attempt);
  EXPECT_EQ(batch->attempts[0].node, "w1");
  EXPECT_FALSE(batch->attempts[0].has_checkpoint);
  EXPECT_EQ(store_->GetJob(job, std::nullopt)->attempts.at(0).peak_gpu_mem_mb, 11469);
  // c. One busy sample resets it.
  Beat({{{"attempt_id", attempt}, {"utilization", 50}}});
  EXPECT_TRUE(LoadIdleAttempts()->attempts.empty());
}

TEST_F(GuardrailStoreTest, WarnsOnceThenRequeuesFromTheCheckpoint) {
  auto [job, attempt] = Running();
  ASSERT_TRUE(store_->CommitCheckpoint({attempt, epoch_, 1, 0.5, "file:///c/1", 10}, AuthOf(attempt)).ok());
  ASSERT_TRUE(store_->SetTeamIdlePolicy("admin", model::IdlePolicy::kRequeue).ok());
  Beat({{{"attempt_id", attempt}, {"utilization", 0}}});
  // a. Before the window (30 min by default): nothing.
  auto batch = *LoadIdleAttempts();
  EXPECT_TRUE(policy::DecideIdle(batch).empty());
  // b. Past it: a warning and a requeue order, in database time.
  Age(attempt, 1801);
  batch = *LoadIdleAttempts();
  auto actions = policy::DecideIdle(batch);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].stop, model::IdleStep::kRequeue);
  EXPECT_EQ(ApplyIdle(actions), 1);
  EXPECT_EQ(ApplyIdle(actions), 0);           // already ordered: skipped
  EXPECT_EQ(Events(job, "idle_warning"), 1);         // and warned once only
  EXPECT_TRUE(LoadIdleAttempts()->attempts.empty());
  // c. The worker gets a preempted stop; its report requeues the job with the reason.
  auto reply = Beat({{{"attempt_id", attempt}, {"utilization", 0}}});
  ASSERT_EQ(reply.stops.size(), 1u);
  EXPECT_EQ(reply.stops[0].reason, protocol::StopReason::kPreempted);
  auto done = store_->FinishAttempt(attempt, epoch_, Outcome::kPreempted, std::nullopt, AuthOf(attempt));
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, model::JobState::kPending);
  EXPECT_EQ(done->reason, "requeued: GPUs idle on w1; resuming from the latest checkpoint");
  ExpectShownAsIdleStop(job, "requeue", "preempted");
}

TEST_F(GuardrailStoreTest, AJobIdleAgainAfterItsRequeueIsStopped) {
  auto [job, first] = Running();
  ASSERT_TRUE(store_->CommitCheckpoint({first, epoch_, 1, 0.5, "file:///c/1", 10}, AuthOf(first)).ok());
  ASSERT_TRUE(store_->SetTeamIdlePolicy("admin", model::IdlePolicy::kRequeue).ok());
  // a. Idle for the window: requeued (the first time), and the job counts it.
  auto requeue = IdleFor(first, 1801, 0);
  ASSERT_EQ(requeue.size(), 1u);
  ASSERT_EQ(requeue[0].stop, model::IdleStep::kRequeue);
  ASSERT_EQ(ApplyIdle(requeue), 1);
  ASSERT_EQ(store_->FinishAttempt(first, epoch_, Outcome::kPreempted, std::nullopt, AuthOf(first))->state,
            model::JobState::kPending);
  running_.clear();
  // b. Placed again, it resumes and idles again: the snapshot carries the count, and the
  //    guardrail stops it instead of requeueing it every window.
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(store_->ApplyPlan(policy::FifoPolicy().Decide(*snap)).ok());
  auto placed = Beat({});
  ASSERT_EQ(placed.assignments.size(), 1u);
  const auto second = placed.assignments[0].attempt_id;
  ASSERT_NE(second, first);
  running_ = {second};
  auto stop = IdleFor(second, 1801, 0);
  auto batch = *LoadIdleAttempts();
  ASSERT_EQ(batch.attempts.size(), 1u);
  EXPECT_EQ(batch.attempts[0].idle_requeues, 1);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_EQ(stop[0].stop, model::IdleStep::kStop);
  ASSERT_EQ(ApplyIdle(stop), 1);
  auto done = WorkerStops(second, "cancelled", Outcome::kCancelled);
  ASSERT_TRUE(done.ok()) << done.status().ToString();
  EXPECT_EQ(done->state, model::JobState::kCancelled);
  EXPECT_EQ(done->reason, "stopped: GPUs idle on w1 again after 1 idle requeue(s)");
  EXPECT_EQ(Events(job, "idle_warning"), 2);  // once per attempt
}

TEST_F(GuardrailStoreTest, JobThatNeverCheckpointedIsStoppedAsCancelled) {
  auto [job, attempt] = Running();
  ASSERT_TRUE(store_->SetTeamIdlePolicy("admin", model::IdlePolicy::kRequeue).ok());
  auto actions = IdleFor(attempt, 4000, 1);
  ASSERT_EQ(actions.size(), 1u);
  EXPECT_EQ(actions[0].stop, model::IdleStep::kStop);
  EXPECT_EQ(ApplyIdle(actions), 1);
  auto done = WorkerStops(attempt, "cancelled", Outcome::kCancelled);
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state, model::JobState::kCancelled);
  EXPECT_EQ(done->reason, "stopped: GPUs idle on w1 and the job never checkpointed");
  ExpectShownAsIdleStop(job, "stop", "cancelled");
}

TEST_F(GuardrailStoreTest, CycleWorksFromTheSnapshotAndMarksItsIdleStopsInIt) {
  auto [job, attempt] = Running();
  ASSERT_TRUE(store_->CommitCheckpoint({attempt, epoch_, 1, 0.5, "file:///c/1", 10}, AuthOf(attempt)).ok());
  ASSERT_TRUE(store_->SetTeamIdlePolicy("admin", model::IdlePolicy::kRequeue).ok());
  Beat({{{"attempt_id", attempt}, {"utilization", 0}}});
  Age(attempt, 1801);
  // a. The cycle's snapshot carries what the reclaimer needs; it orders one requeue.
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  ASSERT_EQ(snap->running.size(), 1u);
  EXPECT_FALSE(snap->running[0].stopping);
  const policy::FifoPolicy fifo;
  const model::Plan plan = policy::DecideCycle(*snap, fifo, policy::CycleDepth::kFull);
  ASSERT_EQ(plan.idle_actions.size(), 1u);
  EXPECT_EQ(plan.idle_actions[0].stop, model::IdleStep::kRequeue);
  auto applied = store_->ApplyPlan(plan);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->idle_stops, 1);
  EXPECT_EQ(Events(job, "idle_warning"), 1);
  // b. The snapshot now shows what a fresh one does: warned and stopping, so Decide
  // does not plan around GPUs being given back.
  auto fresh = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(fresh.ok());
  ASSERT_EQ(fresh->running.size(), 1u);
  EXPECT_TRUE(fresh->running[0].stopping);
  EXPECT_TRUE(fresh->running[0].idle_warned);
  EXPECT_EQ(snap->running[0].stopping, fresh->running[0].stopping);
  EXPECT_EQ(snap->running[0].idle_warned, fresh->running[0].idle_warned);
  // c. Decide again on either: nothing more to do.
  EXPECT_TRUE(policy::DecideCycle(*snap, fifo, policy::CycleDepth::kFull).idle_actions.empty());
  EXPECT_TRUE(policy::DecideCycle(*fresh, fifo, policy::CycleDepth::kFull).idle_actions.empty());
  EXPECT_EQ(Events(job, "idle_warning"), 1);
}

// The idle orders are part of the cycle's plan (decision 0041) and commit with it or not
// at all: a scheduler whose term ended (another took the lease) writes neither the warning
// nor the stop, and no worker is told to stop.
TEST_F(GuardrailStoreTest, IdleOrdersOfACycleWhoseTermEndedAreNotWritten) {
  auto [job, attempt] = Running();
  ASSERT_TRUE(store_->SetTeamIdlePolicy("admin", model::IdlePolicy::kRequeue).ok());
  auto actions = IdleFor(attempt, 4000, 1);
  ASSERT_EQ(actions.size(), 1u);
  ASSERT_EQ(actions[0].stop, model::IdleStep::kStop);
  {
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->ExecScript("UPDATE leader_lease SET expires_at = now() - interval '1 second'").ok());
  }
  PgStore other(conninfo_, 1);
  auto took = other.TryLeadership(std::chrono::seconds(30));
  ASSERT_TRUE(took.ok() && took->leader) << took.status().ToString();
  model::Plan plan;
  plan.idle_actions = actions;
  auto refused = store_->ApplyPlan(plan);
  EXPECT_TRUE(store::IsNotLeader(refused.status())) << refused.status().ToString();
  EXPECT_EQ(Events(job, "idle_warning"), 0);
  EXPECT_EQ(Events(job, "stop_ordered"), 0);
  EXPECT_TRUE(Beat({}).stops.empty()) << "no stop order reached the worker";
}

TEST_F(GuardrailStoreTest, EndedJobUsageCarriesPoolRunTimeAndPeak) {
  auto [job, attempt] = Running();
  Beat({{{"attempt_id", attempt}, {"utilization", 90}, {"memory_used_mb", 7000}}});
  ASSERT_TRUE(store_->FinishAttempt(attempt, epoch_, Outcome::kSucceeded, 0, AuthOf(attempt)).ok());
  // The run time is the attempt's, from its start to its end: set the start 2h 3.4567s before
  // the end, so the run is 7,203,456 ms (whole milliseconds, rounded down), not the few
  // milliseconds this test took.
  {
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->Exec("backdate", "UPDATE attempts SET started_at = ended_at - interval "
                                       "'2 hours 3.4567 seconds' WHERE id = $1",
                           {std::to_string(attempt)})
                    .ok());
  }
  auto usage = store_->EndedJobUsage(CostQuery{});
  ASSERT_TRUE(usage.ok()) << usage.status().ToString();
  ASSERT_EQ(usage->size(), 1u);
  EXPECT_EQ(usage->at(0).job_id, job);
  ASSERT_EQ(usage->at(0).runs.size(), 1u);
  EXPECT_EQ(usage->at(0).runs[0].pool, "a100-od");
  EXPECT_EQ(usage->at(0).runs[0].peak_gpu_mem_mb, 7000);
  EXPECT_EQ(usage->at(0).runs[0].run_ms, 7'203'456);
  // Another team's report does not see it.
  CostQuery other;
  other.team = 999999;
  EXPECT_TRUE(store_->EndedJobUsage(other)->empty());
}

}  // namespace
}  // namespace frugal::store
