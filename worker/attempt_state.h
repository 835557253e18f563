// What the worker keeps on disk about each attempt, so that a worker that dies and restarts
// neither runs a job twice nor loses a result (decisions 0019 and 0036): the fence and epoch
// to report under, the process group and its leader's start time (so a restarted worker kills
// exactly what its previous life started, never a stranger that reused the pid), the uid the
// attempt ran as, and, once it ended, how. AttemptJournal (attempt_journal.h) keeps these
// records; this file holds the record, its JSON, and the process helpers recovery uses.
//
// Threading: free functions; the agent's thread.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "protocol/worker_protocol.h"

namespace frugal::worker {

struct AttemptState {
  std::int64_t attempt_id = 0;
  std::int64_t job_id = 0;
  std::int64_t lease_epoch = 0;
  std::string fence;
  pid_t pgid = 0;                    // 0: never started
  std::uint64_t leader_start = 0;    // /proc/<pgid>/stat field 22, in clock ticks
  std::optional<uid_t> uid;          // set when it ran under a uid of its own
  // Set once it ended: how, and its exit code or -signal.
  std::optional<protocol::Outcome> outcome;
  std::optional<int> exit_code;
  bool lease_kill = false;  // killed because the lease may have lapsed (report only if current)
};

nlohmann::json AttemptStateJson(const AttemptState& s);
// nullopt when `j` is not a whole, valid record.
std::optional<AttemptState> ParseAttemptState(const nlohmann::json& j);

// The `<work_dir>/attempt-<id>/state.json` files a worker before decision 0036 wrote, with
// the path of each; unreadable ones are skipped. Read once, when the journal is opened.
std::vector<std::pair<std::string, AttemptState>> LoadLegacyAttemptStates(
    const std::string& work_dir);

// Start time of process `pid` (field 22 of /proc/<pid>/stat), or nullopt if it is gone.
std::optional<std::uint64_t> ProcessStartTime(pid_t pid);

// SIGKILLs group `pgid` if its leader is still the process that started at `leader_start`.
// True when it was still there.
bool KillIfSameLeader(pid_t pgid, std::uint64_t leader_start);

}  // namespace frugal::worker
