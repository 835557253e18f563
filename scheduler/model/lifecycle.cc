#include "scheduler/model/lifecycle.h"

#include <algorithm>

namespace frugal::model {

const char* ToString(AttemptEnd e) {
  switch (e) {
    case AttemptEnd::kSucceeded:
      return "succeeded";
    case AttemptEnd::kFailed:
      return "failed";
    case AttemptEnd::kTimedOut:
      return "timed_out";
    case AttemptEnd::kCancelled:
      return "cancelled";
    case AttemptEnd::kPreempted:
      return "preempted";
    case AttemptEnd::kNodeLost:
      return "node_lost";
  }
  return "failed";
}

AttemptEnd ParseAttemptEnd(const std::string& s) {
  for (AttemptEnd e : {AttemptEnd::kSucceeded, AttemptEnd::kFailed, AttemptEnd::kTimedOut,
                       AttemptEnd::kCancelled, AttemptEnd::kPreempted, AttemptEnd::kNodeLost}) {
    if (s == ToString(e)) return e;
  }
  return AttemptEnd::kFailed;
}

std::int64_t RetryBackoffSeconds(int failures) {
  const std::int64_t s = std::int64_t{5} << std::min(std::max(failures - 1, 0), 10);
  return std::min<std::int64_t>(s, 300);
}

StatusOr<CancelStep> OnCancel(JobId job, JobState from, const std::string& actor) {
  if (IsTerminal(from)) {
    return Conflict("job " + std::to_string(job) + " has already ended (" + ToString(from) +
                    "); nothing to cancel");
  }
  CancelStep step;
  if (from == JobState::kRunning) {
    step.to = JobState::kRunning;
    step.reason = "stopping: cancel requested";
    step.ends_now = false;
  } else {
    step.reason = "cancelled by " + actor;
  }
  return step;
}

AttemptEnd GangEnd(const std::vector<GangPart>& parts) {
  bool preempted = false;
  for (const GangPart& p : parts) {
    if (p.end == AttemptEnd::kNodeLost) return AttemptEnd::kNodeLost;
    preempted = preempted || (p.end == AttemptEnd::kPreempted && p.own_stop);
  }
  if (preempted) return AttemptEnd::kPreempted;
  // Higher is worse. A part stopped because the gang broke says least: whatever broke it
  // (a failure, a timeout, an idle or user cancel) is the gang's end.
  auto rank = [](AttemptEnd e) {
    switch (e) {
      case AttemptEnd::kSucceeded:
        return 0;
      case AttemptEnd::kPreempted:
        return 1;
      case AttemptEnd::kCancelled:
        return 2;
      case AttemptEnd::kNodeLost:
        return 3;
      case AttemptEnd::kTimedOut:
        return 4;
      case AttemptEnd::kFailed:
        return 5;
    }
    return 5;
  };
  AttemptEnd worst = AttemptEnd::kSucceeded;
  for (const GangPart& p : parts)
    if (rank(p.end) > rank(worst)) worst = p.end;
  return worst;
}

namespace {

std::string ExitText(const AttemptResult& r) {
  return "(exit " + (r.exit_code ? std::to_string(*r.exit_code) : std::string("unknown")) + ")";
}

}  // namespace

Transition AfterAttempt(const JobFacts& job, const AttemptResult& r) {
  Transition t;
  t.failures = job.failures;
  const std::string& node = r.node;
  switch (r.end) {
    case AttemptEnd::kSucceeded:
      t.to = JobState::kSucceeded;
      t.reason = "succeeded on " + node;
      break;
    case AttemptEnd::kFailed:
      ++t.failures;
      if (t.failures >= job.max_attempts || job.cancel_requested) {
        t.to = job.cancel_requested ? JobState::kCancelled : JobState::kFailed;
        t.reason = "failed on " + node + " " + ExitText(r) + "; " + std::to_string(t.failures) +
                   " of " + std::to_string(job.max_attempts) + " attempts used";
      } else {
        t.to = JobState::kPending;
        t.backoff_seconds = RetryBackoffSeconds(t.failures);
        t.reason = "failed on " + node + " " + ExitText(r) + "; retry " +
                   std::to_string(t.failures + 1) + " of " + std::to_string(job.max_attempts) +
                   " after " + std::to_string(t.backoff_seconds) + "s backoff";
      }
      break;
    case AttemptEnd::kTimedOut:
      t.to = JobState::kTimedOut;
      t.reason = "exceeded max_runtime on " + node;
      break;
    case AttemptEnd::kCancelled:
      t.to = JobState::kCancelled;
      t.reason = "cancelled; stopped on " + node;
      break;
    case AttemptEnd::kPreempted:
    case AttemptEnd::kNodeLost: {
      // Neither counts against max_attempts: the capacity went, not the job.
      const char* what = r.end == AttemptEnd::kPreempted ? "preempted" : "lost";
      t.to = job.cancel_requested ? JobState::kCancelled : JobState::kPending;
      t.reason = job.cancel_requested
                     ? "cancelled; stopped on " + node + " (it was also " + what + ")"
                     : (r.end == AttemptEnd::kPreempted ? "preempted on " + node
                                                        : "node " + node + " lost") +
                           "; resuming from the latest checkpoint";
      break;
    }
  }
  const bool stopped = r.end == AttemptEnd::kPreempted || r.end == AttemptEnd::kCancelled;
  if (r.idle_stopped && !job.cancel_requested && stopped) {
    // Stopped by the idle guardrail: say so rather than "preempted".
    if (r.end == AttemptEnd::kPreempted) {
      t.reason = "requeued: GPUs idle on " + node + "; resuming from the latest checkpoint";
    } else if (job.idle_requeues > 0) {
      t.reason = "stopped: GPUs idle on " + node + " again after " +
                 std::to_string(job.idle_requeues) + " idle requeue(s)";
    } else {
      t.reason = "stopped: GPUs idle on " + node + " and the job never checkpointed";
    }
  }
  if (r.late) t.reason = "reported after node " + node + " was declared lost: " + t.reason;
  return t;
}

}  // namespace frugal::model
