// How the worker runs jobs: each attempt is a child process leading its own process group
// (so one signal reaches everything the job started), in its own working directory, with
// stdout and stderr appended to one output file. PosixProcessRunner is the only code in
// Frugal that spawns jobs; the agent sees the ProcessRunner interface so tests can fake it.
// Also here: building a job's environment and reading its output file for shipping.
//
// Threading: not thread-safe; the agent's single thread owns the runner and its children.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "worker/job_identity.h"

namespace frugal::worker {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is searched in the worker's PATH
  std::vector<std::string> env;   // the complete environment, "KEY=value"
  std::string cwd;                // must exist
  std::string output_path;        // stdout and stderr, appended (created if missing)
  // Jobs only. The credentials to run with (unset: the worker's own; needs root).
  std::optional<JobIdentity> identity;
  // Jobs only. Start the command under frugal-keeper (keeper_main.cc): it leads the new
  // group, runs the command as its child and exits as the command did. The keeper asks the
  // kernel for a signal when the caller dies (PR_SET_PDEATHSIG) and then kills the whole
  // group, and with an own uid every process of that uid, so a job never outlives its
  // worker. A kept command gets file descriptors 0-2 only.
  bool keeper = false;
};

struct ReapResult {
  bool running = true;
  // When ended: the exit code, or minus the signal number that killed it; nullopt if the
  // status was lost (someone else reaped the child).
  std::optional<int> exit_code;
};

class ProcessRunner {
 public:
  virtual ~ProcessRunner() = default;

  // Starts `spec` as the leader of a new process group (with `keeper`, the keeper leads it).
  // Returns the leader's pid, which is also the group id. InvalidArgument for an empty argv; NotFound/PermissionDenied/Internal
  // (with the reason) when it cannot be started.
  virtual StatusOr<pid_t> Start(const SpawnSpec& spec) = 0;

  // Sends `signal` to every process in group `pgid`. A group that is gone is not an error.
  virtual void SignalGroup(pid_t pgid, int signal) = 0;

  // Whether group leader `pid` (from Start) has exited. If so, SIGKILLs whatever the job
  // left running in its group and collects the leader's status. Never blocks. After a
  // result with running == false, `pid` must not be passed to any method again.
  virtual ReapResult Reap(pid_t pid) = 0;

  // Whether Start runs anything. A runner that runs nothing (--noop) needs no job uid, no
  // job directories and no sweep of the uid's processes: the agent skips them, and keeps
  // the rest of the protocol (the attempt journal, reports) as for a real job.
  virtual bool RunsProcesses() const { return true; }
};

// Where frugal-keeper is: beside the running program's own binary.
std::string KeeperBeside();

class PosixProcessRunner final : public ProcessRunner {
 public:
  // `keeper`: the frugal-keeper binary that kept commands start under. FailedPrecondition
  // from Start when it is not there.
  explicit PosixProcessRunner(std::string keeper = KeeperBeside()) : keeper_(std::move(keeper)) {}
  const std::string& keeper() const { return keeper_; }
  StatusOr<pid_t> Start(const SpawnSpec& spec) override;
  void SignalGroup(pid_t pgid, int signal) override;
  ReapResult Reap(pid_t pid) override;

 private:
  std::string keeper_;
};

// `frugal-worker --noop`: runs nothing. Every command "exits" 0 as soon as it is started,
// so a benchmark measures the scheduler and the protocol, not fork and exec. The pids it
// returns belong to no process. `on_exit` (optional) is called from Start, as SIGCHLD
// would be for a real child. Not thread-safe.
class NoopProcessRunner final : public ProcessRunner {
 public:
  explicit NoopProcessRunner(std::function<void()> on_exit = nullptr)
      : on_exit_(std::move(on_exit)) {}
  StatusOr<pid_t> Start(const SpawnSpec& spec) override;
  void SignalGroup(pid_t pgid, int signal) override;
  ReapResult Reap(pid_t pid) override;
  bool RunsProcesses() const override { return false; }

 private:
  std::function<void()> on_exit_;
  int next_ = 0;
};

// A job's environment: `base` ("K=V" entries, e.g. the worker's own) minus `drop` (names of
// credentials a job must never see), then `job_env`, then `frugal_env`, later layers
// replacing earlier ones. Sorted by name.
std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::vector<std::string>& drop,
                                          const std::map<std::string, std::string>& job_env,
                                          const std::map<std::string, std::string>& frugal_env);

// The current process's environment as "K=V" entries.
std::vector<std::string> CurrentEnvironment();

struct OutputChunk {
  // Valid UTF-8 without NUL (other bytes and NUL become U+FFFD), at most max_bytes.
  std::string data;
  std::int64_t next_offset = 0;  // where the next read starts
};

// The output of `path` from `offset`, at most `max_bytes` once encoded. A multi-byte
// character cut off at the end is left for the next read. Missing file or nothing new (or
// only the start of a character): empty data.
StatusOr<OutputChunk> ReadOutput(const std::string& path, std::int64_t offset, size_t max_bytes);
// The same for output held in memory: `raw` is the output from `offset` on.
OutputChunk DecodeOutput(std::string_view raw, std::int64_t offset, size_t max_bytes);

// Appends `line` (plus a newline) to `path`, creating it: the worker's own notes in a job's
// output ("started on ...", "ended: ..."). Best effort.
void AppendOutputLine(const std::string& path, const std::string& line);

}  // namespace frugal::worker
