#include "scheduler/engine/engine.h"

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log.h"
#include "common/metrics.h"
#include "scheduler/engine/asio.h"
#include "scheduler/engine/alert_dispatcher.h"
#include "scheduler/policy/cycle.h"

namespace frugal::engine {

namespace asio = boost::asio;

namespace {

void LogIdleActions(const std::vector<model::IdleAction>& actions) {
  for (const auto& a : actions) {
    spdlog::info(R"("event":"idle_gpus","job_id":{},"attempt_id":{},"warn":{},"stop":"{}")",
                 a.job_id, a.attempt_id, a.warn, model::ToString(a.stop));
  }
}

}  // namespace

class Engine::Impl {
 public:
  Impl(store::CycleStore& store, const policy::Policy& policy, EngineOptions options)
      : store_(store),
        policy_(policy),
        options_(options),
        strand_(io_.get_executor()),
        timer_(strand_),
        kick_timer_(strand_) {}

  void Start() {
    work_.emplace(asio::make_work_guard(io_));
    asio::post(strand_, [this] { OnTimer(); });
    thread_ = std::thread([this] { io_.run(); });
  }

  void Stop() {
    EndWaits();
    if (!thread_.joinable()) return;
    asio::post(strand_, [this] {
      stopping_ = true;
      timer_.cancel();
      kick_timer_.cancel();
    });
    work_.reset();
    thread_.join();
    if (held_term_ != 0) {
      // A clean stop hands leadership on at once instead of after a lease.
      const Status st = store_.ReleaseLeadership();
      spdlog::info(R"("event":"leadership_released","term":{},"ok":{})", held_term_, st.ok());
      held_term_ = 0;
    }
  }

  void Kick() {
    // Coalesce: only the first kick since the last cycle posts a cycle. A cycle waiting
    // for kick_spacing runs now instead.
    // kick_pending_ first: set after, a cycle starting in between could leave it set with
    // no cycle coming, and KickForNewWork would then wait for the timer's.
    kick_pending_ = true;
    if (kick_now_.exchange(true)) return;
    asio::post(strand_, [this] {
      if (stopping_ || !kick_now_) return;  // a cycle ran since
      kick_timer_.cancel();
      (void)RunCycle(Depth::kKicked);
    });
  }

  void KickForNewWork() {
    if (kick_pending_.exchange(true)) return;
    asio::post(strand_, [this] {
      if (stopping_ || !kick_pending_) return;  // a cycle ran since
      const auto since = std::chrono::steady_clock::now() - last_cycle_end_;
      if (since >= options_.kick_spacing) {
        (void)RunCycle(Depth::kKicked);
        return;
      }
      // Too soon after the last cycle: run when the spacing is up, with every submit that
      // comes meanwhile.
      kick_timer_.expires_after(options_.kick_spacing - since);
      kick_timer_.async_wait([this](const boost::system::error_code& ec) {
        if (!ec && !stopping_ && kick_pending_) (void)RunCycle(Depth::kKicked);
      });
    });
  }

  CycleStats Stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

  std::int64_t WaitForWork(std::int64_t node, std::int64_t seen,
                           std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(dispatch_mu_);
    dispatch_cv_.wait_for(lock, timeout,
                          [&] { return waits_ended_ || GenerationLocked(node) != seen; });
    return GenerationLocked(node);
  }

  void Wake() {
    {
      std::lock_guard<std::mutex> lock(dispatch_mu_);
      ++all_generation_;
    }
    dispatch_cv_.notify_all();
  }

  void EndWaits() {
    {
      std::lock_guard<std::mutex> lock(dispatch_mu_);
      waits_ended_ = true;
    }
    dispatch_cv_.notify_all();
  }

  // How deep into the queue a cycle reads (decision 0036), as Slurm's event-triggered main
  // scheduler reads default_queue_depth jobs and leaves the rest to its periodic pass: a
  // cycle kicked by a submit or a finish reads each team's head of queue, at most
  // kKickedPerTeam jobs of a team and kKickedMax in all; the timer's cycle reads the whole
  // window, so a job deeper in a queue, and its wait reason, waits at most one interval.
  enum class Depth { kKicked, kFull };
  static constexpr int kKickedPerTeam = 100;
  static constexpr int kKickedMax = 1000;

  store::PendingWindow WindowFor(Depth depth) const {
    store::PendingWindow w = options_.pending;
    if (depth == Depth::kKicked) {
      w.per_team = std::min(w.per_team, kKickedPerTeam);
      w.max_pending = std::min(w.max_pending, kKickedMax);
    }
    return w;
  }

  Status RunCycle(Depth depth = Depth::kFull) {
    // kick_now_ first, the mirror of Kick's order: a Kick between the two stores then
    // posts its own cycle instead of leaving kick_pending_ set with none coming.
    kick_now_ = false;
    kick_pending_ = false;
    metrics::Stopwatch watch;
    Status st = Cycle(WindowFor(depth), depth);
    last_cycle_end_ = std::chrono::steady_clock::now();
    if (store::IsNotLeader(st)) {
      // The fence refused a write: the term ended while this cycle ran (this process was
      // frozen or cut off). Nothing was written; a standby leads now.
      LoseTerm(st.message());
      st = Status::Ok();
    }
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
    std::int64_t term;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      leader = stats_.leader;
      term = stats_.term;
    }
    const char* result = !st.ok() ? "error" : leader ? "ok" : "standby";
    reg.Counter("frugal_scheduling_cycles_total",
                "Scheduling cycles run, by result: ok, error, standby (not the leader).",
                {"result"})
        .Inc({result});
    reg.Gauge("frugal_scheduler_leader", "1 while this scheduler holds the leader lease.")
        .Set({}, leader ? 1 : 0);
    reg.Gauge("frugal_is_leader", "1 while this scheduler holds the leader lease, else 0.")
        .Set({}, leader ? 1 : 0);
    reg.Gauge("frugal_leader_term",
              "The current leader term as this scheduler last read it (whoever holds it).")
        .Set({}, static_cast<double>(term));
    if (leader || !st.ok()) {
      reg.Histogram("frugal_scheduling_cycle_duration_seconds",
                    "Time of one scheduling cycle as leader: sweep, snapshot, decide, apply.",
                    {}, metrics::LatencyBuckets())
          .Observe({}, seconds);
    }
    metrics::CountDatabaseError(st, "engine", reg);
  }

  // Renews or takes the leader lease and logs every change of leadership.
  StatusOr<bool> Lead() {
    auto st = store_.TryLeadership(options_.leader_lease_ttl);
    if (!st.ok()) {
      LoseTerm("lease renewal failed: " + st.status().ToString());
      return st.status();
    }
    if (!st->lost_reason.empty()) LoseTerm(st->lost_reason);
    if (st->acquired) {
      held_term_ = st->term;
      spdlog::info(R"("event":"leadership_acquired","term":{},"lease_ttl_ms":{})", st->term,
                   options_.leader_lease_ttl.count());
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.leader = st->leader;
    stats_.term = st->term;
    return st->leader;
  }

  // This scheduler no longer holds `held_term_` (if it held one): it stops leading now.
  void LoseTerm(const std::string& why) {
    if (held_term_ != 0) {
      spdlog::warn(R"("event":"leadership_lost","term":{},"reason":"{}")", held_term_,
                   JsonEscape(why));
      held_term_ = 0;
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.leader = false;
  }

  Status Cycle(const store::PendingWindow& window, Depth depth) {
    ASSIGN_OR_RETURN(bool leader, Lead());
    if (!leader) return Status::Ok();
    // Lost nodes first, so their jobs are pending in this very cycle's snapshot.
    ASSIGN_OR_RETURN(auto read, store_.SweepAndLoadSnapshot(window));
    for (const auto& node : read.lost) {
      // One line per node, naming it and what it ran, so an operator can follow each job.
      spdlog::warn(R"("event":"node_lost","node":"{}","attempts":[{}],"jobs":[{}],"attempts_requeued":{})",
                   JsonEscape(node.name), fmt::join(node.attempts, ","),
                   fmt::join(node.jobs, ","), node.attempts.size());
    }
    model::Snapshot& snapshot = read.snapshot;
    if (options_.capacity) options_.capacity->Annotate(snapshot);
    model::Plan plan = policy::DecideCycle(
        snapshot, policy_,
        depth == Depth::kKicked ? policy::CycleDepth::kKicked : policy::CycleDepth::kFull);
    // One transaction: idle orders, starts, waits, holds, stops and the budget alerts the
    // spending now reaches; a cycle whose term ended writes none of them.
    ASSIGN_OR_RETURN(auto applied, store_.ApplyPlan(plan));
    LogIdleActions(plan.idle_actions);
    // Committed: the nodes with new orders fetch them now rather than at their next beat.
    Dispatched(plan, applied.idle_stops > 0);
    AnnounceBudgetAlerts(applied.alerts, options_.alerts_fired);
    if (options_.capacity) options_.capacity->Apply(plan, snapshot);
    const int started = applied.started;
    if (started > 0) {
      spdlog::info(R"("event":"jobs_started","count":{},"policy":"{}")", started, policy_.Name());
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.cycles;
    stats_.jobs_started += started;
    return Status::Ok();
  }

  void Dispatched(const model::Plan& plan, bool stops_elsewhere) {
    if (plan.assignments.empty() && plan.stops.empty() && !stops_elsewhere) return;
    {
      std::lock_guard<std::mutex> lock(dispatch_mu_);
      // A stop names an attempt, not its node: every node looks (stops are rare).
      if (!plan.stops.empty() || stops_elsewhere) ++all_generation_;
      for (const auto& a : plan.assignments) ++node_generation_[a.node_id];
    }
    dispatch_cv_.notify_all();
  }

  std::int64_t GenerationLocked(std::int64_t node) const {
    const auto it = node_generation_.find(node);
    return all_generation_ + (it == node_generation_.end() ? 0 : it->second);
  }

  store::CycleStore& store_;
  const policy::Policy& policy_;
  const EngineOptions options_;

  asio::io_context io_;
  asio::strand<asio::io_context::executor_type> strand_;
  asio::steady_timer timer_;  // strand only
  asio::steady_timer kick_timer_;  // strand only: a kicked cycle waiting for kick_spacing
  // When the last cycle ended: strand only, like every cycle (RunCycleForTest runs one only
  // on an engine that was not started).
  std::chrono::steady_clock::time_point last_cycle_end_{};
  bool stopping_ = false;     // strand only
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work_;
  std::thread thread_;
  std::atomic<bool> kick_pending_{false};  // a kick of either kind since the last cycle
  std::atomic<bool> kick_now_{false};      // a Kick() since the last cycle
  std::int64_t held_term_ = 0;  // strand only: the term this scheduler leads, 0 for none

  mutable std::mutex stats_mu_;
  CycleStats stats_;  // guarded by stats_mu_

  // Dispatch wake-ups: a node's generation is all_generation_ plus its own count.
  std::mutex dispatch_mu_;
  std::condition_variable dispatch_cv_;
  std::unordered_map<std::int64_t, std::int64_t> node_generation_;  // guarded by dispatch_mu_
  std::int64_t all_generation_ = 0;                                 // guarded by dispatch_mu_
  bool waits_ended_ = false;                                        // guarded by dispatch_mu_
};

Engine::Engine(store::CycleStore& store, const policy::Policy& policy, EngineOptions options)
    : impl_(std::make_unique<Impl>(store, policy, options)) {}
Engine::~Engine() { impl_->Stop(); }
void Engine::Start() { impl_->Start(); }
void Engine::Stop() { impl_->Stop(); }
void Engine::Kick() { impl_->Kick(); }
void Engine::KickForNewWork() { impl_->KickForNewWork(); }
CycleStats Engine::Stats() const { return impl_->Stats(); }
std::int64_t Engine::WaitForWork(std::int64_t node_id, std::int64_t seen,
                                 std::chrono::milliseconds timeout) {
  return impl_->WaitForWork(node_id, seen, timeout);
}
void Engine::Wake() { impl_->Wake(); }
void Engine::EndWaits() { impl_->EndWaits(); }
Status Engine::RunCycleForTest() { return impl_->RunCycle(); }

}  // namespace frugal::engine
