// The worker agent (docs/worker-protocol.md): registers the node, heartbeats, starts each
// assigned attempt exactly once as its own process group, forwards the attempt's
// checkpoints (in step order) and output, reports how it ended, and stops attempts when
// the scheduler says so, on a spot notice, on the worker's own shutdown, or when its lease
// may have lapsed (so a job never runs in two places at once).
//
// Threading: single-threaded. Run() owns all state; signal handlers only set flags that
// Run() polls (through `should_stop` and the NoticeWatcher).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/client.h"
#include "common/clock.h"
#include "common/status.h"
#include "worker/gpu_probe.h"
#include "worker/notice_watcher.h"
#include "worker/process_runner.h"

namespace frugal::worker {

using Millis = std::chrono::milliseconds;

// One attempt to start, as the heartbeat reply describes it.
struct Assignment {
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
};

// InvalidArgument naming the field when `j` is not a well-formed assignment.
StatusOr<Assignment> ParseAssignment(const nlohmann::json& j);

struct AgentOptions {
  std::string node;
  std::string pool;
  int gpus = 1;
  std::string gpu_type;
  int gpu_mem_gb = 1;
  std::optional<Millis> heartbeat_interval;  // unset: what registration answers
  std::string work_dir;                      // absolute
  std::string checkpoint_root;               // absolute
  Millis grace{10000};                       // SIGTERM -> SIGKILL
  Millis tick{200};                          // reaping, spool and log forwarding
  Millis report_after_shutdown{15000};       // after the grace, then give up reporting
  std::vector<std::string> base_env;         // "K=V" every job inherits (see CurrentEnvironment)
};

class Agent {
 public:
  using GpuStatsFn = std::function<nlohmann::json()>;  // the heartbeat's "gpus" array
  using SleepFn = std::function<void(Millis)>;

  // Collaborators must outlive the agent. `sleep` defaults to sleeping for real.
  Agent(AgentOptions options, api::Client& client, ProcessRunner& runner, NoticeWatcher& notices,
        const Clock& clock, GpuStatsFn gpu_stats, SleepFn sleep = nullptr);

  // Runs until `should_stop` returns true and every attempt is stopped and reported
  // (preempted), or the reports could not be delivered in time. Ok then. An error only when
  // the first registration is refused (unknown pool, bad token): that is a configuration
  // mistake, not something to retry; an unreachable scheduler is retried.
  Status Run(const std::function<bool()>& should_stop);

 private:
  struct Attempt {
    Assignment order;
    pid_t pid = 0;  // group leader, so also the group id; 0 if it never started
    std::vector<int> gpu_indices;
    std::string dir;  // <work_dir>/attempt-<id>: output.log, spool/, default cwd
    Timestamp started_at{};
    std::string stop_outcome;          // why we stopped it: cancelled|preempted|timed_out
    std::optional<Timestamp> kill_at;  // SIGKILL the group then, if it still runs
    bool report = true;  // false: stale or abandoned; kill, reap and forget, never report
    bool exited = false;
    std::optional<int> exit_code;  // exit code or -signal; nullopt: never ran / unknown
    std::int64_t log_offset = 0;   // bytes of output.log already shipped
    std::int64_t log_sent = 0;
    bool log_capped = false;

    std::string output() const { return dir + "/output.log"; }
    std::string spool() const { return dir + "/spool"; }
  };
  enum class Progress { kDone, kLater, kStale };

  // Registration and heartbeat (agent.cc).
  Status Register();
  Status RegisterFirst(const std::function<bool()>& should_stop);
  void Heartbeat();
  void HandleReply(const nlohmann::json& reply);
  void HandleStop(std::int64_t attempt_id, std::string reason);
  void HandleAssignment(const nlohmann::json& j);
  void SetLease(Millis ttl, std::optional<Millis> heartbeat);
  bool CanReport() const;
  void EnforceLease();
  void BeginShutdown();
  void OnNotice();

  // Attempts: starting, stopping, reaping, reporting.
  void Start(const Assignment& order, std::vector<int> gpu_indices);
  void Settle(std::int64_t attempt_id, const std::string& outcome, const std::string& note);
  Attempt& Track(Attempt a);
  void Stop(Attempt& a, const std::string& outcome);
  void StopAll(const std::string& outcome);
  void Abandon(Attempt& a, const std::string& why);
  void AbandonAll(const std::string& why);
  void ServiceAttempts();
  bool Service(Attempt& a);  // true: done with it
  void Reap(Attempt& a);
  void EnforceDeadlines(Attempt& a);
  Progress ForwardSpool(Attempt& a);
  Progress ShipLogs(Attempt& a);
  Progress PostLog(Attempt& a, const std::string& data);
  Progress Finish(Attempt& a);
  std::string OutcomeOf(const Attempt& a) const;
  std::map<std::string, std::string> FrugalEnv(const Attempt& a) const;
  StatusOr<api::ClientResponse> Post(const std::string& path, const nlohmann::json& body);

  const AgentOptions options_;
  api::Client& client_;
  ProcessRunner& runner_;
  NoticeWatcher& notices_;
  const Clock& clock_;
  GpuStatsFn gpu_stats_;
  SleepFn sleep_;

  // The lease, valid while registered_. Every attempt report is fenced by lease_epoch_.
  bool registered_ = false;
  std::int64_t lease_epoch_ = 0;
  Millis lease_ttl_{15000};
  Millis heartbeat_interval_{2000};
  Timestamp lease_safe_until_{};  // 0.8 x TTL after the last good heartbeat was *sent*
  Timestamp next_heartbeat_{};
  bool scheduler_reachable_ = true;  // only to log changes, not every failure

  std::map<std::int64_t, Attempt> attempts_;  // by attempt id
  std::set<std::int64_t> seen_;  // every attempt id started or settled here: start once
  GpuAllocator gpus_;

  bool notice_ = false;    // spot notice: report it, stop everything, start nothing
  bool stopping_ = false;  // worker shutdown: stop everything, report, exit; drains like notice_
  Timestamp give_up_at_{};
};

}  // namespace frugal::worker
