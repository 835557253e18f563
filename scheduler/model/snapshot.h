// What one scheduling cycle sees (Snapshot) and what it decides (Plan). Decide() maps one
// to the other with no I/O; the engine loads the snapshot and applies the plan.
#pragma once

#include <string>
#include <vector>

#include "common/clock.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"

namespace frugal::model {

// A pending job as the policy needs it (a subset of Job, cheap to load in bulk).
struct PendingJob {
  JobId id = 0;
  TeamId team_id = 0;
  int gpus = 1;
  std::vector<std::string> gpu_types;
  std::optional<int> min_gpu_mem_gb;
  int priority_rank = 2;  // 0 = highest class
  Tolerance tolerance = Tolerance::kRestartable;
  std::optional<Timestamp> deadline;
  Timestamp created_at{};
  std::string reason;  // the reason currently stored, so unchanged reasons are not rewritten
  std::vector<JobId> waiting_for;            // dependencies that have not ended yet
  std::optional<JobId> failed_dependency;    // a dependency that ended without success
};

// An active attempt occupying GPUs on a node.
struct RunningAttempt {
  AttemptId attempt_id = 0;
  JobId job_id = 0;
  NodeId node_id = 0;
  int gpus = 0;
  int priority_rank = 2;
};

struct Snapshot {
  Timestamp now{};  // database time at load; the only clock policy code sees
  std::vector<PendingJob> pending;  // ordered by (priority_rank, id)
  std::vector<RunningAttempt> running;
  std::vector<Node> nodes;  // live nodes only (lease not expired)
  std::vector<Pool> pools;
};

// Start `job_id` on `node_id` with `gpus` GPUs.
struct Assignment {
  JobId job_id = 0;
  NodeId node_id = 0;
  int gpus = 0;
  std::string reason;
};

// Leave `job_id` waiting, with the reason shown to its owner.
struct Wait {
  JobId job_id = 0;
  std::string reason;
};

struct Plan {
  std::vector<Assignment> assignments;
  std::vector<Wait> waits;
  std::vector<Wait> cancels;  // jobs that can never run (a dependency failed)
};

}  // namespace frugal::model
