// The `exec` provider (issue 18, decision 0029): pools whose nodes are cloud instances that
// admin-supplied commands create, destroy and list (the Slurm power_save pattern; the
// contract is in docs/providers.md). Each instance starts frugal-worker itself with the join
// token it was created with, and registers under the node name it was created for.
//
// It reconciles what the policy wants against what exists, once per scheduling cycle, on
// the leader only (Annotate and Apply run on the engine thread after it won the lease):
// - node requests become `create` runs (bounded by max_nodes and max_concurrent_creates);
// - a node the policy releases (idle past the pool's idle_timeout) is destroyed;
// - an instance whose worker has not registered within boot_timeout is destroyed and the
//   pool backs off; so is one whose node has been lost that long;
// - a `create` that exits 75 (no capacity) or fails backs the pool off for stockout_backoff:
//   Annotate then shows the pool as not growable, so the policy asks the next pool in cost
//   order;
// - an instance `list` shows that no row owns is a leak, destroyed after leak_grace; a row
//   whose instance `list` no longer shows (the cloud reclaimed it) is ended.
// Commands run on threads of their own, never on the engine thread; every state change is
// a compare-and-set row change in the InstanceStore, which is what a restarted or newly
// elected scheduler carries on from.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/exec_pools.h"
#include "scheduler/engine/capacity_provider.h"
#include "scheduler/provider/command.h"
#include "scheduler/store/instance_store.h"

namespace frugal::provider {

struct ExecProviderOptions {
  std::vector<config::ExecPoolSpec> pools;
  std::string work_dir;  // commands run in <work_dir>/<pool> (created)
  // The environment commands inherit from the scheduler, by name (then the pool's env,
  // then FRUGAL_*). Cloud CLIs find their credentials through HOME or these.
  std::vector<std::string> pass_env{"PATH", "HOME", "LANG", "LC_ALL", "TZ", "TMPDIR", "USER"};
};

using CommandFn = std::function<CommandResult(const std::vector<std::string>& argv,
                                              const std::vector<std::string>& env,
                                              const std::string& cwd,
                                              std::chrono::milliseconds timeout)>;

class ExecProvider final : public engine::CapacityProvider {
 public:
  // `store` must outlive the provider. `run` defaults to RunCommand.
  ExecProvider(ExecProviderOptions options, store::InstanceStore& store, CommandFn run = nullptr);
  ~ExecProvider();  // Stop()

  // Sets the scheduler's URL instances are told (unless a pool names its own worker_url).
  // Each instance gets a join token of its own, bound to its node and used once.
  void Start(std::string scheduler_url);
  // Waits for the commands in flight (each bounded by its timeout). Instances are left as
  // they are: a scheduler restart must not tear down the fleet.
  void Stop();

  void Annotate(model::Snapshot& snapshot) override;
  void Apply(const model::Plan& plan, const model::Snapshot& snapshot) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Listed {
    std::string instance_id, node;
  };
  struct ListResult {
    Timestamp launched_at{};  // database time of the cycle that launched it
    bool ok = false;
    std::vector<Listed> items;
  };
  struct PoolRun {
    config::ExecPoolSpec spec;
    Clock::time_point backoff_until{};
    std::string backoff_why;
    int creates_in_flight = 0;
    bool list_in_flight = false;
    Clock::time_point next_list{};
    std::optional<ListResult> list;  // the last finished list, applied by the next Apply
    std::map<std::string, Clock::time_point> unowned_since;  // cloud id -> first listed unowned
  };

  PoolRun* Find(const std::string& pool);
  void Reconcile(PoolRun& run, const model::Pool& pool, const std::vector<store::Instance>& rows,
                 const model::Snapshot& snapshot);
  void ApplyList(PoolRun& run, const std::vector<store::Instance>& rows, const ListResult& list);
  void Create(PoolRun& run, const model::Pool& pool);
  void Destroy(PoolRun& run, const store::Instance& row, const std::string& reason);
  void End(const store::Instance& row, const std::string& reason, const std::string& detail = "");
  void Change(const store::Instance& row, std::vector<store::InstanceState> from,
              const store::InstanceChange& change);
  std::vector<std::string> Env(const PoolRun& run,
                               const std::vector<std::pair<std::string, std::string>>& vars) const;
  std::string Cwd(const PoolRun& run) const;
  void Launch(std::function<void()> fn);  // runs fn on a thread of its own; mu_ held

  ExecProviderOptions options_;
  store::InstanceStore& store_;
  CommandFn run_;
  std::string scheduler_url_;

  std::mutex mu_;  // guards everything below, between the engine thread and command threads
  std::condition_variable idle_;
  int threads_ = 0;
  bool stopping_ = false;
  std::vector<PoolRun> pools_;
  std::set<std::int64_t> busy_;  // instance rows with a command in flight
  std::map<std::int64_t, Clock::time_point> retry_after_;  // failed destroys: next try
  std::map<std::string, Timestamp> lost_since_;  // running node -> first seen not live
  std::set<std::string> warned_;                 // pools named in config but not in the store
};

}  // namespace frugal::provider
