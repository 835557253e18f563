// The checkpoint spool: how a job hands a checkpoint report to the worker that runs it.
// `frugal checkpoint` (inside the job) writes one file per report into
// $FRUGAL_CHECKPOINT_SPOOL, signed with the attempt's secret ($FRUGAL_CHECKPOINT_SECRET,
// 64 hex characters that only this attempt's processes receive); the agent reads them in
// step order, drops any whose secret is not its attempt's (another job writing into this
// spool), and forwards the rest to the scheduler under the attempt's fence. The file
// format lives only here.
//
// Threading: free functions without shared state. A job may write the spool while the
// agent reads it: a report appears whole (temporary file, fsync, rename) or not at all.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::protocol {

struct CheckpointReport {
  std::int64_t step = 0;
  double progress = 0;  // 0..1
  std::string uri;      // where the (already synced) checkpoint data is
  std::int64_t size_bytes = 0;
  std::string secret;   // the attempt's spool secret; never sent to the scheduler
};

// Writes one report as `<spool_dir>/<step, 20 digits>.json`, atomically and durably (the
// directory must exist: the worker makes it, owned by the job). A second report for the same
// step replaces the first. InvalidArgument for a negative step or size, progress outside
// 0..1 or an empty uri; Internal when the file cannot be written.
Status WriteCheckpointReport(const std::string& spool_dir, const CheckpointReport& report);

// Parses a report file's text. InvalidArgument when it is not a valid report.
StatusOr<CheckpointReport> ParseCheckpointReport(const std::string& text);

// The report as the scheduler's checkpoint route wants it (without the lease epoch and
// fence, which the worker adds, and without the secret, which stays on the node).
nlohmann::json ToJson(const CheckpointReport& report);

struct SpoolEntry {
  std::string path;
  Status status;            // not ok: the file is not a valid report; delete it
  CheckpointReport report;  // meaningful only when `status` is ok
};

// The finished report files in `spool_dir`, lowest step first (unreadable ones first of
// all, so they are cleared out of the way). Temporaries are skipped; a missing directory
// holds nothing.
std::vector<SpoolEntry> ListSpool(const std::string& spool_dir);

}  // namespace frugal::protocol
