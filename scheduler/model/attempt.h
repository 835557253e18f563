// Runs of a job (Attempt), their committed checkpoints and the job's event log entries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "scheduler/model/job.h"

namespace frugal::model {

using AttemptId = std::int64_t;
using NodeId = std::int64_t;

struct Attempt {
  AttemptId id = 0;
  JobId job_id = 0;
  int number = 0;  // 1-based within the job
  int rank = 0;    // a multi-node gang's part: its rank (all parts share the number)
  NodeId node_id = 0;
  std::string node;
  std::string pool;
  int gpus = 0;
  std::int64_t lease_epoch = 0;  // fencing token for worker reports
  Timestamp started_at{};
  std::optional<Timestamp> ended_at;
  std::string end_reason;  // empty while active; succeeded|failed|preempted|node_lost|...
  // The stop order it was given, empty for none: priority_preemption, migrate_off_spot,
  // migrate_to_spot (the scheduler's) or idle_reclaim (the idle-GPU guardrail's).
  std::string stop_kind;
  std::optional<int> exit_code;
  // Peak GPU memory of the attempt's busiest GPU, MiB, from heartbeats (unknown without
  // nvidia-smi): the input of right-sizing advice.
  std::optional<int> peak_gpu_mem_mb;
};

struct Checkpoint {
  std::int64_t id = 0;
  JobId job_id = 0;
  AttemptId attempt_id = 0;
  std::int64_t step = 0;
  double progress = 0;  // 0..1
  std::string uri;
  std::int64_t size_bytes = 0;
  Timestamp created_at{};
};

struct JobEvent {
  std::int64_t id = 0;
  JobId job_id = 0;
  Timestamp at{};
  std::string kind;  // submitted, state_changed, cancel_requested, ...
  std::string from_state;
  std::string to_state;
  std::string message;
};

}  // namespace frugal::model
