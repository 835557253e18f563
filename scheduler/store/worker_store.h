// The WorkerStore port: what the worker protocol (docs/worker-protocol.md) asks of durable
// state. Every write is fenced (protocol/worker_protocol.h): a node writes only as itself
// (the node id its credential resolved to), at its current lease epoch, and about an
// attempt only with that attempt's fence. A stale caller gets Conflict and changes
// nothing; an attempt on another node is PermissionDenied. Thread-safe; each method is one
// transaction.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/worker_protocol.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"

namespace frugal::store {

struct Registration {
  model::NodeId node_id = 0;
  std::int64_t lease_epoch = 0;
  int attempts_lost = 0;  // active attempts of the previous epoch, now ended node_lost
  std::string credential;  // the node's new credential, in clear: returned once, kept hashed
};

struct HeartbeatRequest {
  model::NodeId node_id = 0;  // from the caller's node credential
  std::string node;           // must be that node's name
  std::int64_t lease_epoch = 0;
  std::vector<model::AttemptId> running;
  std::string gpu_stats_json = "[]";
  // A spot interruption notice: counts toward the pool's learned rate while it stands. A
  // node under notice that heartbeats with neither flag had its notice withdrawn: it is
  // ready again and the notice no longer counts (decision 0021).
  bool notice = false;
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
  std::string fence;
  // A part of a multi-node gang (decision 0032): its rank (0 = the master), the gang's
  // size, and where rank 0's node listens for the rendezvous. Size 1: a single node.
  int rank = 0;
  int gang_size = 1;
  std::string master_addr;  // rank 0's node address (its registered `address`)
  int master_port = 0;      // chosen by the store per attempt, the same for every part
};

struct StopOrder {
  model::AttemptId attempt_id = 0;
  protocol::StopReason reason = protocol::StopReason::kPreempted;
  // The attempt's fence (empty for kStale): the worker may never have received the
  // assignment, and reports the attempt stopped with it.
  std::string fence;
};

// Who reports about an attempt: the node its credential resolved to, and the attempt's
// fence as the assignment gave it.
struct AttemptAuth {
  model::NodeId node_id = 0;
  std::string fence;
};

struct HeartbeatReply {
  std::vector<AttemptOrder> assignments;
  std::vector<StopOrder> stops;
  // This heartbeat withdrew the node's spot notice: it takes work again (decision 0021).
  bool notice_withdrawn = false;
};

// What a woken long-poll hands its node (decision 0038): the node's undelivered attempts of
// its current epoch and its stop orders, as a heartbeat would return them.
struct PendingOrders {
  std::int64_t lease_epoch = 0;  // the epoch they belong to; 0: the node is not live
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
using protocol::Outcome;

struct LogChunk {
  std::int64_t seq = 0;
  int attempt = 0;
  std::string data;
};

struct FinishReport {
  model::AttemptId attempt_id = 0;
  std::int64_t lease_epoch = 0;
  std::string fence;
  Outcome outcome = Outcome::kSucceeded;
  std::optional<int> exit_code;
  std::string log;  // the attempt's last output, appended before it ends ("" for none)
};

struct FinishResult {
  Status status;       // as FinishAttempt would have answered this report alone
  model::JobId job_id = 0;                              // when ok
  model::JobState state = model::JobState::kPending;    // the job's state after it, when ok
};

class WorkerStore {
 public:
  virtual ~WorkerStore() = default;

  // Registers (or re-registers, bumping the epoch) `node` in `pool_name` and issues a new
  // node credential, which replaces the old one. Attempts of an earlier epoch end
  // node_lost and their jobs become pending again. `caller` is the node the caller's
  // credential belongs to, or nullopt for a join token. Conflict when a node of that name
  // has a live lease and `caller` is not that node: a node cannot be taken over while it
  // heartbeats. The node row is locked first, so an assignment racing with this either
  // lands before it (and is ended here) or after it (on the new epoch).
  // `join_token`: the id of the join token presented (none for a node credential). A token
  // the exec provider minted for one instance (decision 0029) registers that instance's
  // node only (PermissionDenied for any other name), once: it is revoked in this very
  // transaction, so a job that reads it from the instance's metadata later cannot use it.
  virtual StatusOr<Registration> RegisterWorker(
      const model::Node& node, const std::string& pool_name, Seconds lease_ttl,
      std::optional<model::NodeId> caller,
      std::optional<std::int64_t> join_token = std::nullopt) = 0;

  // Extends the lease; Conflict if the epoch is not current or `req.node` is not the
  // caller's node. Acknowledges `running`, ends any active attempt of an older epoch on
  // this node (node_lost), returns undelivered attempts of the current epoch and stop
  // orders.
  virtual StatusOr<HeartbeatReply> Heartbeat(const HeartbeatRequest& req, Seconds lease_ttl) = 0;

  // The orders a heartbeat of `node` would return now, read without writing anything: no
  // lease renewal and no acknowledgement (the next heartbeat does both; until then the
  // same orders are read again, and the worker starts each attempt once).
  virtual StatusOr<PendingOrders> ReadOrders(model::NodeId node) = 0;

  // Commits a checkpoint. PermissionDenied if the attempt is not on `auth.node_id`;
  // Conflict if it is not active on that epoch or the fence is wrong; FailedPrecondition
  // (field step) if the step does not advance the job's latest.
  virtual Status CommitCheckpoint(const CheckpointReport& report, const AttemptAuth& auth) = 0;

  // Appends output, keeping at most `cap_bytes` per attempt. Fenced as CommitCheckpoint.
  virtual Status AppendLog(model::AttemptId attempt, std::int64_t lease_epoch,
                           const std::string& data, std::int64_t cap_bytes,
                           const AttemptAuth& auth) = 0;

  // Ends the attempt and moves its job (see docs/worker-protocol.md). Returns the job.
  // Fenced as CommitCheckpoint. Any report marks the attempt acknowledged: an attempt no
  // worker ever acknowledged is not billed.
  virtual StatusOr<model::Job> FinishAttempt(model::AttemptId attempt, std::int64_t lease_epoch,
                                             Outcome outcome, std::optional<int> exit_code,
                                             const AttemptAuth& auth) = 0;

  // Batched finish (decision 0027): each report's final output, if any, is appended
  // (AppendLog) and its attempt finished (FinishAttempt) in one transaction, each report on
  // its own: a refused report (stale, forged, another node's) is rolled back alone and the
  // others stand. Bills once for the batch. Returns one result per report, in order; an
  // error only when the transaction itself failed (then nothing was applied).
  virtual StatusOr<std::vector<FinishResult>> FinishAttempts(
      const std::vector<FinishReport>& reports, std::int64_t log_cap_bytes,
      const AttemptAuth& node) = 0;

  // Output chunks of a job after `after_seq`, oldest first, at most `limit`.
  virtual StatusOr<std::vector<LogChunk>> ReadLogs(model::JobId job,
                                                   std::optional<model::TeamId> visible_team,
                                                   std::int64_t after_seq, int limit) = 0;
};

}  // namespace frugal::store
