// The job's transitions when an attempt ends (model/lifecycle.h), without PostgreSQL.
#include "scheduler/model/lifecycle.h"

#include <gtest/gtest.h>

namespace frugal::model {
namespace {

AttemptResult Ended(AttemptEnd e, std::optional<int> exit_code = std::nullopt) {
  AttemptResult r;
  r.end = e;
  r.exit_code = exit_code;
  r.node = "n1";
  return r;
}

TEST(LifecycleTest, AFailureIsRetriedWithGrowingBackoffUntilTheAttemptsAreUsed) {
  JobFacts job;
  job.max_attempts = 3;
  Transition t = AfterAttempt(job, Ended(AttemptEnd::kFailed, 2));
  EXPECT_EQ(t.to, JobState::kPending);
  EXPECT_EQ(t.failures, 1);
  EXPECT_EQ(t.backoff_seconds, 5);
  EXPECT_EQ(t.reason, "failed on n1 (exit 2); retry 2 of 3 after 5s backoff");
  job.failures = 1;
  t = AfterAttempt(job, Ended(AttemptEnd::kFailed, 2));
  EXPECT_EQ(t.to, JobState::kPending);
  EXPECT_EQ(t.backoff_seconds, 10);
  job.failures = 2;
  t = AfterAttempt(job, Ended(AttemptEnd::kFailed));
  EXPECT_EQ(t.to, JobState::kFailed);
  EXPECT_EQ(t.failures, 3);
  EXPECT_EQ(t.backoff_seconds, 0);
  EXPECT_EQ(t.reason, "failed on n1 (exit unknown); 3 of 3 attempts used");
  EXPECT_EQ(RetryBackoffSeconds(7), 300);
  EXPECT_EQ(RetryBackoffSeconds(40), 300);
}

TEST(LifecycleTest, PreemptionsAndLostNodesNeverCountAndACancelWins) {
  JobFacts job;
  job.max_attempts = 1;
  for (AttemptEnd e : {AttemptEnd::kPreempted, AttemptEnd::kNodeLost}) {
    Transition t = AfterAttempt(job, Ended(e));
    EXPECT_EQ(t.to, JobState::kPending) << ToString(e);
    EXPECT_EQ(t.failures, 0) << ToString(e);
    EXPECT_NE(t.reason.find("resuming from the latest checkpoint"), std::string::npos);
  }
  job.cancel_requested = true;
  Transition t = AfterAttempt(job, Ended(AttemptEnd::kPreempted));
  EXPECT_EQ(t.to, JobState::kCancelled);
  EXPECT_EQ(t.reason, "cancelled; stopped on n1 (it was also preempted)");
  job.max_attempts = 3;  // a retry left, but the owner asked to cancel
  t = AfterAttempt(job, Ended(AttemptEnd::kFailed, 1));
  EXPECT_EQ(t.to, JobState::kCancelled);
}

TEST(LifecycleTest, TerminalEndsAndTheirReasons) {
  JobFacts job;
  EXPECT_EQ(AfterAttempt(job, Ended(AttemptEnd::kSucceeded)).to, JobState::kSucceeded);
  EXPECT_EQ(AfterAttempt(job, Ended(AttemptEnd::kSucceeded)).reason, "succeeded on n1");
  EXPECT_EQ(AfterAttempt(job, Ended(AttemptEnd::kTimedOut)).to, JobState::kTimedOut);
  EXPECT_EQ(AfterAttempt(job, Ended(AttemptEnd::kCancelled)).to, JobState::kCancelled);
  EXPECT_STREQ(ToString(AttemptEnd::kNodeLost), "node_lost");
}

TEST(LifecycleTest, IdleStopsAndLateResultsSaySo) {
  JobFacts job;
  AttemptResult r = Ended(AttemptEnd::kPreempted);
  r.idle_stopped = true;
  EXPECT_EQ(AfterAttempt(job, r).reason,
            "requeued: GPUs idle on n1; resuming from the latest checkpoint");
  r.end = AttemptEnd::kCancelled;
  EXPECT_EQ(AfterAttempt(job, r).reason,
            "stopped: GPUs idle on n1 and the job never checkpointed");
  job.idle_requeues = 2;
  EXPECT_EQ(AfterAttempt(job, r).reason, "stopped: GPUs idle on n1 again after 2 idle requeue(s)");
  // A failure is a failure, idle or not.
  r.end = AttemptEnd::kFailed;
  EXPECT_EQ(AfterAttempt(job, r).to, JobState::kPending);
  AttemptResult late = Ended(AttemptEnd::kSucceeded);
  late.late = true;
  EXPECT_EQ(AfterAttempt(job, late).reason,
            "reported after node n1 was declared lost: succeeded on n1");
}

TEST(LifecycleTest, ACancelEndsAWaitingJobAtOnceAndMarksARunningOne) {
  for (JobState from : {JobState::kPending, JobState::kHeld}) {
    auto step = OnCancel(7, from, "ann");
    ASSERT_TRUE(step.ok());
    EXPECT_EQ(step->to, JobState::kCancelled);
    EXPECT_TRUE(step->ends_now);
    EXPECT_EQ(step->reason, "cancelled by ann");
  }
  auto running = OnCancel(7, JobState::kRunning, "ann");
  ASSERT_TRUE(running.ok());
  EXPECT_EQ(running->to, JobState::kRunning);
  EXPECT_FALSE(running->ends_now);
  EXPECT_EQ(running->reason, "stopping: cancel requested");
  auto ended = OnCancel(7, JobState::kSucceeded, "ann");
  ASSERT_FALSE(ended.ok());
  EXPECT_EQ(ended.status().code(), StatusCode::kConflict);
  EXPECT_EQ(ended.status().message(), "job 7 has already ended (succeeded); nothing to cancel");
}

TEST(LifecycleTest, AGangEndsAsItsWorstPart) {
  using E = AttemptEnd;
  const bool own = true, broke = false;  // why a preempted part stopped
  EXPECT_EQ(GangEnd({{E::kSucceeded}, {E::kSucceeded}}), E::kSucceeded);
  EXPECT_EQ(GangEnd({{E::kSucceeded}, {E::kPreempted, own}, {E::kPreempted, broke}}),
            E::kPreempted);
  // A part crashed; Frugal stopped the others: the crash is the job's failure.
  EXPECT_EQ(GangEnd({{E::kFailed}, {E::kPreempted, broke}}), E::kFailed);
  EXPECT_EQ(GangEnd({{E::kPreempted, broke}, {E::kFailed}, {E::kTimedOut}}), E::kFailed);
  EXPECT_EQ(GangEnd({{E::kCancelled}, {E::kSucceeded}}), E::kCancelled);
  // The idle guardrail stopped one idle rank (cancelled); the others were stopped because
  // the gang broke: the gang is stopped, not requeued.
  EXPECT_EQ(GangEnd({{E::kCancelled}, {E::kPreempted, broke}}), E::kCancelled);
  EXPECT_EQ(GangEnd({}), E::kSucceeded);
}

TEST(LifecycleTest, AReclaimOrALostNodeExplainsTheOtherRanksCrashing) {
  using E = AttemptEnd;
  // Rank 0's node is reclaimed; rank 1's collective times out and it exits 1. Not a failure.
  EXPECT_EQ(GangEnd({{E::kPreempted, true}, {E::kFailed}}), E::kPreempted);
  EXPECT_EQ(GangEnd({{E::kFailed}, {E::kNodeLost}, {E::kPreempted, false}}), E::kNodeLost);
  const Transition t = AfterAttempt(JobFacts{}, Ended(GangEnd({{E::kFailed}, {E::kNodeLost}})));
  EXPECT_EQ(t.to, JobState::kPending);
  EXPECT_EQ(t.failures, 0);
}

}  // namespace
}  // namespace frugal::model
