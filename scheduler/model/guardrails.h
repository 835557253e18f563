// Guardrails as values (issue 5, docs/decisions/0012-guardrails.md): the admin settings
// (max_runtime per priority class, approval of big premium requests, idle reclamation), the
// engine's view of idle attempts, and a finished job's usage for right-sizing advice.
// The decisions over them are pure functions in scheduler/policy/guardrails/guardrails.h.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/model/job.h"

namespace frugal::model {

// max_runtime of one priority class: given to jobs that set none (default), and the most a
// job may ask (maximum). Unset: no default / no maximum.
struct ClassRuntime {
  std::optional<Seconds> default_max_runtime;
  std::optional<Seconds> max_max_runtime;
  // Priority preemption's protection window: a running job of this class is not stopped
  // for a higher class before it has run this long. Unset: the policy's default (10 min).
  std::optional<Seconds> min_run_time;
};

struct GuardrailSettings {
  std::map<std::string, ClassRuntime> runtimes;  // by priority class
  // Approval: a job asking more than approval_above_gpus GPUs that may run on one of these
  // types (it names one, or names none) is held until an admin approves. Empty: off.
  std::vector<std::string> premium_gpu_types;
  int approval_above_gpus = 8;
  // Idle: every GPU of an attempt under this utilisation (percent) for idle_window.
  int idle_threshold_percent = 5;
  Seconds idle_window{1800};
};

// What a team wants done with a job whose GPUs stay idle: always a warning event; with
// kRequeue also a checkpoint-and-requeue (or a stop, if it never checkpointed).
enum class IdlePolicy { kWarn, kRequeue };
const char* ToString(IdlePolicy p);
StatusOr<IdlePolicy> ParseIdlePolicy(const std::string& s);

// An active attempt whose GPUs were under the threshold at its last heartbeat, as the
// cycle's snapshot sees it in database time (policy::IdleBatchOf).
struct IdleAttempt {
  std::int64_t attempt_id = 0;
  JobId job_id = 0;
  std::string node;
  Timestamp idle_since{};
  bool warned = false;          // its idle warning was already written
  bool has_checkpoint = false;  // the job has a committed checkpoint to resume from
  IdlePolicy policy = IdlePolicy::kWarn;
  int idle_requeues = 0;  // times the job was already requeued for idle GPUs
};

struct IdleBatch {
  Timestamp now{};  // database time
  int threshold_percent = 5;
  Seconds window{1800};
  std::vector<IdleAttempt> attempts;
};

// The stop an idle attempt gets, if any (the warning is IdleAction::warn).
enum class IdleStep { kNone, kRequeue, kStop };
const char* ToString(IdleStep s);

struct IdleAction {
  std::int64_t attempt_id = 0;
  JobId job_id = 0;
  bool warn = false;                // write the (once per attempt) warning event
  IdleStep stop = IdleStep::kNone;  // kRequeue or kStop: order the worker to stop it
  std::string message;              // the event text and the job's reason
};

// One run of a finished job, for right-sizing: where, how many GPUs, for how long, and the
// peak GPU memory of its busiest GPU (unknown when the worker could not measure it).
struct UsageRun {
  std::string pool;
  int gpus = 0;
  std::int64_t run_ms = 0;
  std::optional<int> peak_gpu_mem_mb;
};

struct JobUsage {
  JobId job_id = 0;
  Tolerance tolerance = Tolerance::kRestartable;
  std::vector<UsageRun> runs;
};

}  // namespace frugal::model
