// The `local` provider: keeps the configured number of frugal-worker processes (pretend
// GPUs) running per pool on this machine, for the demo, tests and a laptop. For spot pools
// it also plays the cloud: a preemption source decides when a node is reclaimed; the node
// then gets an interruption notice (its notice file), its jobs checkpoint and stop within
// the grace period, the node goes away, and a fresh node (new name, like a new instance)
// joins when capacity is back.
//
// Threading: Start() runs a thread that owns every child; Stop() (any thread) ends it.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/local_workers.h"
#include "scheduler/engine/capacity_provider.h"
#include "scheduler/provider/preemption_source.h"
#include "worker/process_runner.h"

namespace frugal::provider {

struct LocalProviderOptions {
  std::string scheduler_url;    // http://host:port the workers report to (set by Start)
  std::string worker_token;     // role worker (set by Start)
  std::string worker_bin;       // frugal-worker
  std::string dir;              // node directories live under it: <dir>/<node>/
  std::string checkpoint_root;  // shared by all local nodes
  std::vector<config::LocalWorkerSpec> pools;
};

class LocalProvider final : public engine::CapacityProvider {
 public:
  // Loads trace files; InvalidArgument/NotFound naming the pool when one cannot be used.
  static StatusOr<std::unique_ptr<LocalProvider>> Create(LocalProviderOptions options);
  ~LocalProvider();  // Stop()

  // Starts the provider's thread once the scheduler listens (the workers need its URL).
  void Start(std::string scheduler_url, std::string worker_token);
  // Stops every worker (SIGTERM: they report their jobs preempted), SIGKILL after the grace.
  void Stop();

  // Elastic pools (max_nodes > nodes): the policy asks for GPUs, the provider starts nodes;
  // the policy releases idle nodes, the provider stops them.
  void Annotate(model::Snapshot& snapshot) override;
  void Apply(const model::Plan& plan, const model::Snapshot& snapshot) override;

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    std::string base_name;  // <pool>-<i>
    int generation = 0;     // bumps per replacement node: <pool>-<i>, <pool>-<i>-g2, ...
    std::optional<pid_t> pid;
    std::string node;  // current node name
    std::optional<Clock::time_point> noticed_at;
    bool reclaimed = false;  // exited after a notice
    bool wanted = false;     // should run: a base node, or requested by the policy
    bool stop_sent = false;  // released: SIGTERM sent once
    Clock::time_point down_until{};  // not restarted before this
  };
  struct PoolState {
    config::LocalWorkerSpec spec;
    std::vector<Slot> slots;
    std::optional<RatePreemptions> rate;
    std::optional<TraceAvailability> trace;
  };

  explicit LocalProvider(LocalProviderOptions options) : options_(std::move(options)) {}
  void Loop();
  void Tick(PoolState& pool, Clock::time_point now, double elapsed_s);
  void StartNode(PoolState& pool, Slot& slot);
  void GiveNotice(PoolState& pool, Slot& slot, const std::string& why, Clock::time_point now);
  void Shutdown();

  LocalProviderOptions options_;
  std::vector<PoolState> pools_;
  worker::PosixProcessRunner runner_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;  // guards pools_ between the provider thread and the engine
  std::thread thread_;
  Clock::time_point started_{};
};

}  // namespace frugal::provider
