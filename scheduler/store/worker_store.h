// The WorkerStore port: what the worker protocol (docs/worker-protocol.md) asks of durable
// state. Every write is fenced by (attempt id, lease epoch) or (node, lease epoch): a stale
// caller gets Conflict and changes nothing. Thread-safe; each method is one transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"

namespace frugal::store {

struct Registration {
  model::NodeId node_id = 0;
  std::int64_t lease_epoch = 0;
  int attempts_lost = 0;  // active attempts of the previous epoch, now ended node_lost
};

struct HeartbeatRequest {
  std::string node;
  std::int64_t lease_epoch = 0;
  std::vector<model::AttemptId> running;
  std::string gpu_stats_json = "[]";
  bool notice = false;    // a spot interruption notice: counts toward the pool's learned rate
  bool draining = false;  // the worker is shutting down: place nothing new, learn nothing
  // Per attempt: [{"attempt_id", "utilization"?, "memory_used_mb"?}] over the attempt's own
  // GPUs (busiest GPU). A missing utilization is unknown, and unknown is never idle.
  std::string usage_json = "[]";
};

// An attempt for the worker to start.
struct AttemptOrder {
  model::AttemptId attempt_id = 0;
  model::JobId job_id = 0;
  int number = 0;
  model::JobSpec spec;
  int gpus = 0;
  std::string resume_from;  // latest committed checkpoint URI, empty if none
  std::optional<std::int64_t> resume_step;
};

struct StopOrder {
  model::AttemptId attempt_id = 0;
  std::string reason;  // cancelled | preempted | stale
};

struct HeartbeatReply {
  std::vector<AttemptOrder> assignments;
  std::vector<StopOrder> stops;
};

struct CheckpointReport {
  model::AttemptId attempt_id = 0;
  std::int64_t lease_epoch = 0;
  std::int64_t step = 0;
  double progress = 0;
  std::string uri;
  std::int64_t size_bytes = 0;
};

// How an attempt ended, as the worker saw it.
enum class Outcome { kSucceeded, kFailed, kTimedOut, kCancelled, kPreempted };
const char* ToString(Outcome o);
StatusOr<Outcome> ParseOutcome(const std::string& s);

struct LogChunk {
  std::int64_t seq = 0;
  int attempt = 0;
  std::string data;
};

class WorkerStore {
 public:
  virtual ~WorkerStore() = default;

  // Registers (or re-registers, bumping the epoch) `node` in `pool_name`. Attempts of an
  // earlier epoch end node_lost and their jobs become pending again.
  virtual StatusOr<Registration> RegisterWorker(const model::Node& node,
                                                const std::string& pool_name,
                                                Seconds lease_ttl) = 0;

  // Extends the lease; Conflict if the epoch is not current. Acknowledges `running`,
  // returns undelivered attempts and stop orders.
  virtual StatusOr<HeartbeatReply> Heartbeat(const HeartbeatRequest& req, Seconds lease_ttl) = 0;

  // Commits a checkpoint. Conflict if the attempt is not active on that epoch;
  // FailedPrecondition (field step) if the step does not advance the job's latest.
  virtual Status CommitCheckpoint(const CheckpointReport& report) = 0;

  // Appends output, keeping at most `cap_bytes` per attempt.
  virtual Status AppendLog(model::AttemptId attempt, std::int64_t lease_epoch,
                           const std::string& data, std::int64_t cap_bytes) = 0;

  // Ends the attempt and moves its job (see docs/worker-protocol.md). Returns the job.
  virtual StatusOr<model::Job> FinishAttempt(model::AttemptId attempt, std::int64_t lease_epoch,
                                             Outcome outcome, std::optional<int> exit_code) = 0;

  // Output chunks of a job after `after_seq`, oldest first, at most `limit`.
  virtual StatusOr<std::vector<LogChunk>> ReadLogs(model::JobId job,
                                                   std::optional<model::TeamId> visible_team,
                                                   std::int64_t after_seq, int limit) = 0;
};

}  // namespace frugal::store
