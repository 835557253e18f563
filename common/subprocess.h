// Runs short-lived helper programs (initdb, pg_ctl) to completion and captures their
// output. Jobs are not run through here: the worker's process runner owns those.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace frugal {

struct SubprocessResult {
  int exit_code = -1;  // -1 if killed by a signal
  std::string output;  // stdout and stderr interleaved, truncated to 64 KiB
};

// Runs argv[0] (searched in PATH) with argv and the current environment, waits for it.
// An error Status only when the program could not be started at all.
StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv);

// Like RunSubprocess, but as `user` (via runuser) when this process runs as root and
// `user` is not empty.
StatusOr<SubprocessResult> RunSubprocessAs(const std::string& user,
                                           const std::vector<std::string>& argv);

}  // namespace frugal
