// The job's life as pure code (issue 16): what the end of one of its attempts does to the
// job. The store reads the job's facts in its transaction, calls AfterAttempt, and writes
// the Transition it returns; every rule (retries, backoff, cancel, idle stops, late
// results) is tested without PostgreSQL (tests/scheduler/model/lifecycle_test.cc).
//
// Thread-safety: free functions on values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/model/job.h"

namespace frugal::model {

// Why an attempt ended: the vocabulary of `attempts.end_reason`.
enum class AttemptEnd { kSucceeded, kFailed, kTimedOut, kCancelled, kPreempted, kNodeLost };
const char* ToString(AttemptEnd e);
// The end named by ToString; kFailed for any other text (the column's CHECK allows none).
AttemptEnd ParseAttemptEnd(const std::string& s);

// What the job's row says when one of its attempts ends.
struct JobFacts {
  int failures = 0;  // failed attempts so far (preemptions and node losses never count)
  int max_attempts = 3;
  bool cancel_requested = false;
  std::int64_t idle_requeues = 0;  // times the idle guardrail requeued it before
};

// How the attempt ended, as its worker reported it.
struct AttemptResult {
  AttemptEnd end = AttemptEnd::kSucceeded;
  std::optional<int> exit_code;
  std::string node;           // where it ran, for the reason its owner reads
  bool idle_stopped = false;  // the idle guardrail ordered the stop
  bool late = false;          // reported after its node had been declared lost
};

// Where the job goes. `backoff_seconds` > 0: not placed again before now + that.
struct Transition {
  JobState to = JobState::kPending;
  std::string reason;
  int failures = 0;
  std::int64_t backoff_seconds = 0;
};

// The job's next state after `r`. A failure counts against max_attempts and is retried
// after RetryBackoffSeconds; a preemption never counts; a cancel requested meanwhile wins
// over a retry or a requeue.
Transition AfterAttempt(const JobFacts& job, const AttemptResult& r);

// What a cancel request does to a job in state `from`. One that is not running ends at
// once; a running one keeps running, marked, until its worker stops it, and its attempt's
// end completes the cancel (AfterAttempt with cancel_requested). Conflict, naming the
// state, for a job that has already ended.
struct CancelStep {
  JobState to = JobState::kCancelled;
  std::string reason;  // what the job's owner reads now
  bool ends_now = true;
};
StatusOr<CancelStep> OnCancel(JobId job, JobState from, const std::string& actor);

// A multi-node gang's attempt is one part per node; the job moves once, when its last
// part has ended. `own_stop`: the part was stopped for a reason of its own (its node's
// reclaim notice or shutdown, a stop order of the policy), not because the gang broke.
struct GangPart {
  AttemptEnd end = AttemptEnd::kSucceeded;
  bool own_stop = false;
};
// How the gang ended. A lost node, or a part preempted for a reason of its own, explains
// the rest: the other ranks' programs crash when a peer vanishes (a collective times out),
// and those crashes are not the job's failures. Otherwise the worst part: failed, timed
// out, cancelled (the idle guardrail's or the user's), preempted (stopped because the gang
// broke); succeeded only if every part did. Empty: kSucceeded.
AttemptEnd GangEnd(const std::vector<GangPart>& parts);

// 5 s after the first failure, doubling, at most 300 s.
std::int64_t RetryBackoffSeconds(int failures);

}  // namespace frugal::model
