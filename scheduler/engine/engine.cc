#include "scheduler/engine/engine.h"

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "common/log.h"
#include "common/metrics.h"
#include "scheduler/engine/asio.h"
#include "scheduler/engine/idle_reclaimer.h"
#include "scheduler/engine/alert_dispatcher.h"
#include "scheduler/policy/budget.h"
#include "scheduler/policy/quota.h"

namespace frugal::engine {

namespace asio = boost::asio;

class Engine::Impl {
 public:
  Impl(store::JobStore& store, const policy::Policy& policy, EngineOptions options)
      : store_(store), policy_(policy), options_(options), strand_(io_.get_executor()),
        timer_(strand_) {}

  void Start() {
    work_.emplace(asio::make_work_guard(io_));
    asio::post(strand_, [this] { OnTimer(); });
    thread_ = std::thread([this] { io_.run(); });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    asio::post(strand_, [this] {
      stopping_ = true;
      timer_.cancel();
    });
    work_.reset();
    thread_.join();
  }

  void Kick() {
    // Coalesce: only the first kick since the last cycle posts a cycle.
    if (kick_pending_.exchange(true)) return;
    asio::post(strand_, [this] {
      if (!stopping_) (void)RunCycle();
    });
  }

  CycleStats Stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

  Status RunCycle() {
    kick_pending_ = false;
    metrics::Stopwatch watch;
    Status st = Cycle();
    Observe(st, watch.Seconds());
    std::lock_guard<std::mutex> lock(stats_mu_);
    std::string err = st.ok() ? "" : st.ToString();
    if (err != stats_.last_error && !err.empty()) {
      spdlog::warn(R"("event":"cycle_failed","error":"{}")", JsonEscape(err));
    } else if (err.empty() && !stats_.last_error.empty()) {
      spdlog::info(R"("event":"cycle_recovered")");
    }
    stats_.last_error = err;
    return st;
  }

 private:
  void OnTimer() {
    if (stopping_) return;
    (void)RunCycle();
    timer_.expires_after(std::chrono::seconds(options_.interval.count()));
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (!ec) OnTimer();
    });
  }

  // Cycle metrics in the process registry (served at GET /metrics). A standby cycle only
  // asks for the lock, so its duration would hide the leader's: it is counted, not timed.
  void Observe(const Status& st, double seconds) {
    auto& reg = metrics::Default();
    bool leader;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      leader = stats_.leader;
    }
    const char* result = !st.ok() ? "error" : leader ? "ok" : "standby";
    reg.Counter("frugal_scheduling_cycles_total",
                "Scheduling cycles run, by result: ok, error, standby (not the leader).",
                {"result"})
        .Inc({result});
    reg.Gauge("frugal_scheduler_leader", "1 while this scheduler holds the leader lock.")
        .Set({}, leader ? 1 : 0);
    if (leader || !st.ok()) {
      reg.Histogram("frugal_scheduling_cycle_duration_seconds",
                    "Time of one scheduling cycle as leader: sweep, snapshot, decide, apply.",
                    {}, metrics::LatencyBuckets())
          .Observe({}, seconds);
    }
    metrics::CountDatabaseError(st, "engine", reg);
  }

  Status Cycle() {
    ASSIGN_OR_RETURN(bool leader, store_.TryLeadership());
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      stats_.leader = leader;
    }
    if (!leader) return Status::Ok();
    // Lost nodes first, so their jobs are pending in this very cycle's snapshot.
    ASSIGN_OR_RETURN(auto lost, store_.SweepLostNodes());
    for (const auto& node : lost) {
      // One line per node, naming it and what it ran, so an operator can follow each job.
      spdlog::warn(R"("event":"node_lost","node":"{}","attempts":[{}],"jobs":[{}],"attempts_requeued":{})",
                   JsonEscape(node.name), fmt::join(node.attempts, ","),
                   fmt::join(node.jobs, ","), node.attempts.size());
    }
    ASSIGN_OR_RETURN(auto snapshot, store_.LoadSnapshot(options_.max_pending));
    // Guardrails: idle GPUs, from the snapshot; its stop orders are marked in it.
    RETURN_IF_ERROR(ReclaimIdleGpus(store_, snapshot).status());
    if (options_.capacity) options_.capacity->Annotate(snapshot);
    model::Plan plan = policy_.Decide(snapshot);
    policy::EnforceQuotas(snapshot, plan);  // whatever the policy, quotas hold
    policy::EnforceBudgets(snapshot, plan);  // and hard budgets
    ASSIGN_OR_RETURN(int started, store_.ApplyPlan(plan));
    RETURN_IF_ERROR(FireBudgetAlerts(store_, options_.alerts_fired));
    if (options_.capacity) options_.capacity->Apply(plan, snapshot);
    if (started > 0) {
      spdlog::info(R"("event":"jobs_started","count":{},"policy":"{}")", started, policy_.Name());
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.cycles;
    stats_.jobs_started += started;
    return Status::Ok();
  }

  store::JobStore& store_;
  const policy::Policy& policy_;
  const EngineOptions options_;

  asio::io_context io_;
  asio::strand<asio::io_context::executor_type> strand_;
  asio::steady_timer timer_;  // strand only
  bool stopping_ = false;     // strand only
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::atomic<bool> kick_pending_{false};

  mutable std::mutex stats_mu_;
  CycleStats stats_;  // guarded by stats_mu_
};

Engine::Engine(store::JobStore& store, const policy::Policy& policy, EngineOptions options)
    : impl_(std::make_unique<Impl>(store, policy, options)) {}
Engine::~Engine() { impl_->Stop(); }
void Engine::Start() { impl_->Start(); }
void Engine::Stop() { impl_->Stop(); }
void Engine::Kick() { impl_->Kick(); }
CycleStats Engine::Stats() const { return impl_->Stats(); }
Status Engine::RunCycleForTest() { return impl_->RunCycle(); }

}  // namespace frugal::engine
