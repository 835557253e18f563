// The worker agent (docs/worker-protocol.md): registers the node with its join token and
// then speaks only with the node credential it receives (kept in <work_dir>/node.credential,
// 0600, so a restarted worker re-registers at once), heartbeats, starts each assigned
// attempt exactly once as its own process group under its own uid (job_identity.h) behind
// a keeper that dies with the worker, forwards the attempt's checkpoints (in step order,
// only those signed with the attempt's secret) and output, reports how it ended under the
// attempt's fence, and stops attempts when the scheduler says so, on a spot notice, on the
// worker's own shutdown, or when its lease may have lapsed (so a job never runs in two
// places at once). A result it could not report is kept on disk and reported when the
// scheduler answers again, also after a restart (attempt_state.h); before registering, a
// starting worker kills whatever its previous life left running.
//
// Threading: single-threaded. Run() owns all state; signal handlers only set flags that
// Run() polls (through `should_stop` and the NoticeWatcher).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "api/client.h"
#include "common/clock.h"
#include "common/status.h"
#include "worker/gpu_probe.h"
#include "protocol/worker_protocol.h"
#include "worker/attempt_journal.h"
#include "worker/attempt_state.h"
#include "worker/job_identity.h"
#include "worker/notice_watcher.h"
#include "worker/process_runner.h"

namespace frugal::worker {

using Millis = std::chrono::milliseconds;

using protocol::StartOrder;
using protocol::Outcome;
using protocol::ParseStartOrder;

struct AgentOptions {
  std::string join_token;  // a worker-role token: only for registering
  std::string node;
  // Registration's "address": where a gang's other parts reach this node. Empty: not sent.
  std::string address;
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
  // "K=V" every job inherits: only what the worker's pass_env setting names (PATH, LANG,
  // ...); never the worker's credentials.
  std::vector<std::string> base_env;
  JobUsers job_users;  // who jobs run as (job_identity.h); default: the worker's own user
  // Called on the agent's thread with the node credential after each registration, and
  // with "" when the scheduler no longer takes it (the dispatch waiter polls with it).
  std::function<void(const std::string& credential)> on_credential = nullptr;
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

  // The scheduler has new orders for this node (DispatchWaiter): the next pass of the loop
  // handles those `reply` carries (decision 0038), or heartbeats at once when it carries
  // none for this lease. Thread-safe; pair it with waking the `sleep` function, or it
  // waits for the current tick to end.
  void Dispatch(nlohmann::json reply = nlohmann::json());

 private:
  struct Attempt {
    StartOrder order;
    pid_t pid = 0;  // group leader, so also the group id; 0 if it never started
    std::vector<int> gpu_indices;
    std::string dir;  // <work_dir>/attempt-<id>: output.log, spool/, job/ (cwd)
    // Under --noop nothing runs, so nothing is on disk: its output is the worker's own
    // notes, kept here (decision 0036).
    bool in_memory = false;
    std::string notes;
    std::int64_t lease_epoch = 0;  // the epoch it was assigned under: its reports use it
    std::string secret;            // the job's spool secret (FRUGAL_CHECKPOINT_SECRET)
    std::optional<JobIdentity> identity;
    std::uint64_t leader_start = 0;
    Timestamp started_at{};
    std::optional<Outcome> stop_outcome;  // why we stopped it
    bool lease_kill = false;  // killed because the lease may have lapsed
    std::optional<Timestamp> kill_at;  // SIGKILL the group then, if it still runs
    bool report = true;  // false: stale or abandoned; kill, reap and forget, never report
    bool exited = false;
    std::optional<int> exit_code;  // exit code or -signal; nullopt: never ran / unknown
    std::int64_t log_offset = 0;   // bytes of output.log already shipped
    std::int64_t log_sent = 0;
    bool log_capped = false;
    std::string final_log;  // the rest of its output, sent with its finish report

    std::string output() const { return dir + "/output.log"; }
    std::string spool() const { return dir + "/spool"; }
    std::string job_dir() const { return dir + "/job"; }
  };
  enum class Progress { kDone, kLater, kStale };

  // Registration and heartbeat (agent.cc).
  Status CleanUpPreviousLife();
  Status Register();
  Status RegisterWith(const std::string& token, bool with_credential);
  Status RegisterFirst(const std::function<bool()>& should_stop);
  void Heartbeat();
  void HandleReply(const nlohmann::json& reply);
  // Handles the orders a wake-up delivered, if they are for this lease: true then, and no
  // heartbeat is needed for them.
  bool TakeDelivered();
  void HandleStop(std::int64_t attempt_id, protocol::StopReason reason);
  void HandleAssignment(const nlohmann::json& j);
  void SetLease(Millis ttl, std::optional<Millis> heartbeat);
  bool CanReport() const;
  void EnforceLease();
  void LoseLease(const std::string& why);
  void ReportLateResults();
  void BeginShutdown();
  void OnNotice();
  void OnNoticeWithdrawn();  // the notice source withdrew it: take work again

  // Attempts: starting, stopping, reaping, reporting.
  void Start(const StartOrder& order, std::vector<int> gpu_indices);
  Status PrepareDirs(const Attempt& a, const std::string& checkpoint_dir);
  void Settle(const StartOrder& order, Outcome outcome, const std::string& note);
  Attempt& Track(Attempt a);
  void SaveState(const Attempt& a);
  void SyncJournal();  // before any report of a result: the result is on disk first
  // The attempt's output: its file, or its notes when in memory.
  void Note(Attempt& a, const std::string& line);
  StatusOr<OutputChunk> ReadOutputOf(const Attempt& a, std::int64_t offset, size_t max) const;
  void Stop(Attempt& a, Outcome outcome);
  void StopAll(Outcome outcome);
  void Abandon(Attempt& a, const std::string& why);
  // What servicing an attempt leaves to do: keep it, forget it, or report how it ended.
  enum class Next { kKeep, kDone, kFinish };
  void ServiceAttempts();
  Next Service(Attempt& a);
  bool TakeFinalLog(Attempt& a);
  void SweepEnded();  // true: the rest of its output is in a.final_log
  // Reports the ended attempts `ids` in one POST /v1/workers/finish (one by one through
  // Finish() when the scheduler has no batch route), forgetting those it need not retry.
  void FinishReady(const std::vector<std::int64_t>& ids);
  void FinishGroup(const std::vector<std::int64_t>& ids, nlohmann::json reports);
  void FinishOneByOne(const std::vector<std::int64_t>& ids);
  void Reap(Attempt& a);
  void EnforceDeadlines(Attempt& a);
  Progress ForwardSpool(Attempt& a);
  Progress ShipLogs(Attempt& a);
  Progress PostLog(Attempt& a, const std::string& data);
  Progress Finish(Attempt& a);
  Outcome OutcomeOf(const Attempt& a) const;
  nlohmann::json Fenced(const Attempt& a, nlohmann::json body) const;
  std::map<std::string, std::string> FrugalEnv(const Attempt& a) const;
  std::string CheckpointDir(const StartOrder& o) const;
  StatusOr<api::ClientResponse> Post(const std::string& path, const nlohmann::json& body);

  const AgentOptions options_;
  api::Client& client_;
  ProcessRunner& runner_;
  NoticeWatcher& notices_;
  const Clock& clock_;
  GpuStatsFn gpu_stats_;
  SleepFn sleep_;
  std::atomic<bool> dispatch_{false};
  std::mutex delivered_mu_;
  nlohmann::json delivered_;  // guarded by delivered_mu_: the last wake-up's reply
  std::set<uid_t> reachable_uids_;
  std::vector<JobIdentity> ended_uids_;  // reaped this pass: swept, then released
  std::optional<std::set<uid_t>> busy_uids_;  // while starting one reply's assignments  // uids whose jobs were seen to reach the work dir
  bool batch_finish_ = true;  // false once the scheduler answered 404 (an older one)

  std::string join_token_;        // the token this worker joins with (never sent afterwards)
  std::string credential_;       // the node credential; empty until the first registration
  std::string credential_path_;  // <work_dir>/node.credential

  // The lease, valid while registered_. Every attempt report is fenced by lease_epoch_.
  bool registered_ = false;
  bool lease_doubt_ = false;  // no good heartbeat for 0.8 x TTL: try the old epoch first
  std::int64_t lease_epoch_ = 0;
  Millis lease_ttl_{15000};
  Millis heartbeat_interval_{2000};
  Timestamp lease_safe_until_{};  // 0.8 x TTL after the last good heartbeat was *sent*
  Timestamp next_heartbeat_{};
  bool scheduler_reachable_ = true;  // only to log changes, not every failure

  std::map<std::int64_t, Attempt> attempts_;  // by attempt id
  AttemptJournal journal_;  // what a restart must know of them
  std::set<std::int64_t> seen_;  // every attempt id started or settled here: start once
  std::map<std::int64_t, std::string> pending_fences_;  // from stop orders, by attempt id
  GpuAllocator gpus_;
  JobUsers job_users_;

  bool notice_ = false;    // spot notice: report it, stop everything, start nothing (until withdrawn)
  bool stopping_ = false;  // worker shutdown: stop everything, report, exit; drains like notice_
  Timestamp give_up_at_{};
};

}  // namespace frugal::worker
