// Runs one admin-supplied provider command (the exec provider's create, destroy and list):
// no shell, a given environment only, its own session and process group (so a timeout
// kills everything it started), stdout kept (up to 64 KiB) and the tail of stderr kept for
// the audit log. Blocks the calling thread until the command exits or times out.
//
// The command's exit ends the wait even if something it started in the background still
// holds its stdout open: only what was written by then is read. So a `create` script may
// leave a process behind (a fake cloud's instance) without hanging the provider.
#pragma once

#include <chrono>
#include <string>
#include <vector>

namespace frugal::provider {

struct CommandResult {
  int exit_code = -1;      // the exit status, or 128 + signal; -1 if it could not start
  bool timed_out = false;  // killed at the timeout (exit_code is then the kill's)
  std::string out;         // stdout, at most 64 KiB
  std::string err_tail;    // the last 2 KiB of stderr (or why it could not start)
  bool ok() const { return exit_code == 0 && !timed_out; }
  // A line for logs and the audit: "exit 3: <stderr tail>", "timed out after 120s", ...
  std::string Describe() const;
};

// `argv[0]` is a path, or a name searched in the scheduler's PATH; `env` is the whole environment, "K=v".
// At the timeout the group gets SIGTERM, and SIGKILL 5 s later.
CommandResult RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& cwd, std::chrono::milliseconds timeout);

}  // namespace frugal::provider
