// The checkpoint spool: how a job hands a checkpoint report to the worker that runs it.
// `frugal checkpoint` (inside the job) writes one file per report into
// $FRUGAL_CHECKPOINT_SPOOL; the agent reads them in step order and forwards each to the
// scheduler under the attempt's fencing token. The file format lives only here.
//
// Threading: free functions without shared state. A job may write the spool while the
// agent reads it: a report appears whole (temporary file, fsync, rename) or not at all.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::worker {

struct CheckpointReport {
  std::int64_t step = 0;
  double progress = 0;  // 0..1
  std::string uri;      // where the (already synced) checkpoint data is
  std::int64_t size_bytes = 0;
};

// Writes one report as `<spool_dir>/<step, 20 digits>.json`, atomically and durably, creating
// `spool_dir` if needed. A second report for the same step replaces the first.
// InvalidArgument for a negative step or size, progress outside 0..1 or an empty uri;
// Internal when the file cannot be written.
Status WriteCheckpointReport(const std::string& spool_dir, std::int64_t step, double progress,
                             const std::string& uri, std::int64_t size_bytes);

// Parses a report file's text. InvalidArgument when it is not a valid report.
StatusOr<CheckpointReport> ParseCheckpointReport(const std::string& text);

// The report as the scheduler's checkpoint route wants it (without the lease epoch).
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

}  // namespace frugal::worker
