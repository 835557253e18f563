// The worker protocol's shared vocabulary (docs/worker-protocol.md): what the scheduler and
// frugal-worker say to each other, defined once for both ends. The scheduler encodes
// assignments and parses reports with these; the worker parses assignments and encodes
// reports with the same functions, so neither keeps a copy of the other's strings.
//
// Fencing rules (decision 0019), enforced by the scheduler's store:
// - A node joins with a join token (a worker-role API token) and receives a node
//   credential ("frn_" + 256 random bits) that is valid for that node only. The scheduler
//   keeps its SHA-256; registering again replaces it.
// - Every attempt has a fence: 64 hex characters (256 random bits). A report about an
//   attempt (checkpoint, logs, finish) must come with the node's credential, the node's
//   current lease epoch and the attempt's fence; otherwise nothing changes (409, or 403
//   when the attempt is not on the calling node).
// - A node whose lease is live cannot be registered by any other credential.
// - A job never sees the node credential or the fence. It hands checkpoint reports to the
//   worker through its spool with its own per-attempt secret (protocol/spool.h).
//
// Threading: pure values and functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace frugal::protocol {

// How an attempt ended, as the worker saw it (POST .../finish "outcome").
enum class Outcome { kSucceeded, kFailed, kTimedOut, kCancelled, kPreempted };
const char* ToString(Outcome o);
// InvalidArgument (field "outcome") naming the allowed values.
StatusOr<Outcome> ParseOutcome(std::string_view s);

// Why the scheduler tells a worker to stop an attempt (heartbeat reply "stop").
// kStale: the attempt is not active on this node any more: kill it and report nothing.
enum class StopReason { kCancelled, kPreempted, kTimedOut, kStale };
const char* ToString(StopReason r);
// InvalidArgument (field "reason") naming the allowed values.
StatusOr<StopReason> ParseStopReason(std::string_view s);
// The outcome a worker reports for an attempt it stopped for `r` (kStale: none is reported;
// it maps to kPreempted only so a caller never reads an uninitialised value).
Outcome OutcomeOf(StopReason r);

// A well-formed fence: exactly 64 lower-case hex characters.
bool IsFence(std::string_view s);

// Where a node's peers reach it (registration "address", an assignment's gang master_addr):
// a host name or IP literal as the job's own rendezvous will dial it. 1 to 255 characters
// (a DNS name's limit), none of them whitespace or control characters, which no resolver
// takes and which would break the environment variable it ends up in. InvalidArgument
// naming `field` otherwise.
Status CheckAddress(std::string_view s, const std::string& field);

// One attempt for a worker to start (heartbeat reply "assignments").
struct StartOrder {
  std::int64_t attempt_id = 0;
  std::int64_t job_id = 0;
  int attempt = 0;  // 1, 2, ... for the job
  int gpus = 0;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string working_dir;  // empty: the attempt's own directory
  std::string resume_from;  // latest committed checkpoint URI, or ""
  std::optional<std::int64_t> resume_step;
  std::optional<std::chrono::seconds> max_runtime;
  std::string fence;  // presented with every report about this attempt
  // A part of a multi-node gang: its rank, the gang's size, where rank 0 listens.
  int rank = 0;
  int gang_size = 1;
  std::string master_addr;
  int master_port = 0;
};

// The largest gang an assignment may describe (ParseStartOrder refuses more).
inline constexpr int kMaxGangSize = 64;

// A gang part (gang_size > 1) carries "gang": {"rank", "size", "master_addr",
// "master_port"}; a single-node attempt carries no "gang", so older workers see nothing new.
nlohmann::json Encode(const StartOrder& a);
// InvalidArgument naming what is wrong when `j` is not a well-formed assignment; a bad
// "gang" names its field ("gang.size", "gang.rank", "gang.master_addr", "gang.master_port").
StatusOr<StartOrder> ParseStartOrder(const nlohmann::json& j);

// The body of POST /v1/workers/attempts/{id}/finish.
nlohmann::json FinishBody(std::int64_t lease_epoch, const std::string& fence, Outcome outcome,
                          std::optional<int> exit_code);

}  // namespace frugal::protocol
