// Read-only views the web dashboard needs beyond the job and cost routes: recent
// interruptions (preemptions and lost nodes) with the attempt that recovered each, and a
// job's timeline (attempts with their pool and cost, and every checkpoint), and the same
// job's totals in short for a page of the jobs list. Plain values, filled by
// JobStore::RecentInterruptions, JobStore::JobTimeline and JobStore::JobSummaries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"

namespace frugal::store {

// An attempt that ended `preempted` or `node_lost`, or that the idle guardrail stopped
// (`cancelled`: the job never checkpointed), and the job's next attempt (if any).
struct Interruption {
  model::JobId job = 0;
  std::string job_name, team;
  int attempt = 0;  // the attempt's number within its job
  // reason: preempted | node_lost | cancelled, or how a reclaimed gang's other part ended
  // (failed, succeeded) when the ledger counts its work as lost
  std::string pool, node, reason;
  // node, priority, migrate_off_spot, migrate_to_spot or idle_reclaim (as /metrics)
  std::string cause;
  Timestamp ended_at{};
  Micros lost = 0;  // work since the last checkpoint, priced (the ledger's lost_work)
  // The recovery: the job's next attempt, empty while it waits.
  std::optional<int> next_attempt;
  std::string next_pool;
  std::optional<Timestamp> next_started_at;
};

struct TimelineAttempt {
  model::AttemptId id = 0;
  int number = 0;
  std::string pool, capacity_kind, node;
  int gpus = 0;
  Timestamp started_at{};
  std::optional<Timestamp> ended_at;  // empty while running
  std::string end_reason;             // empty while running
  Micros cost = 0;                    // priced up to now while running
  Micros lost = 0;
  std::string stop_kind;  // the stop order it was given (model::Attempt::stop_kind), or empty
};

struct TimelineCheckpoint {
  model::AttemptId attempt_id = 0;
  std::int64_t step = 0;
  double progress = 0;
  Timestamp created_at{};
};

struct JobTimeline {
  model::JobId job = 0;
  Timestamp now{};  // the database's clock, the right edge of a running attempt
  std::vector<TimelineAttempt> attempts;        // by number
  std::vector<TimelineCheckpoint> checkpoints;  // by time
};

// A job's timeline in short, for GET /v1/jobs: its latest attempt's pool and the sums of
// its attempts' cost and lost work, computed exactly as JobTimeline's attempts.
struct JobSummary {
  std::string pool;  // the latest attempt's pool
  Micros cost = 0;   // running attempts priced up to now
  Micros lost = 0;
};

}  // namespace frugal::store
