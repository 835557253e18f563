// Real child processes for end-to-end tests: the scheduler binary, the CLI. Output goes
// to files so a test can read it while the child runs and show it when something fails.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace frugal::testing {

// Environment: the parent's, with `overrides` set (an empty value unsets).
using EnvOverrides = std::map<std::string, std::string>;

class ChildProcess {
 public:
  // Starts argv with stdout/stderr written to `log_prefix`.out / .err.
  ChildProcess(const std::vector<std::string>& argv, const EnvOverrides& env,
               const std::string& log_prefix);
  ~ChildProcess();  // SIGKILLs the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits until stdout contains `needle`; returns the line holding it, or nullopt.
  std::optional<std::string> WaitForOutput(const std::string& needle,
                                           std::chrono::milliseconds timeout);
  void Signal(int sig);
  // Exit code, -signal if killed by a signal, nullopt on timeout.
  std::optional<int> Wait(std::chrono::milliseconds timeout);
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  pid_t pid_ = -1;
  std::string out_path_, err_path_;
  std::optional<int> exit_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion (at most `timeout`), capturing stdout and stderr separately.
CommandResult RunCommand(const std::vector<std::string>& argv, const EnvOverrides& env,
                         std::chrono::milliseconds timeout = std::chrono::seconds(60));

std::string ReadFile(const std::string& path);

}  // namespace frugal::testing
