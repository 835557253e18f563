// The scheduling engine: runs cycles (load snapshot -> DecideCycle -> apply the plan in one
// transaction) on one Asio strand, every `interval` and whenever kicked. Kicks coalesce:
// any number of kicks during a cycle cause exactly one more cycle. A kick for new work (a
// submit) waits until `kick_spacing` after the last cycle; any other kick runs at once.
//
// Only the leader runs cycles, so several schedulers may share a database. Leadership is
// a lease in database time with a fencing term (decision 0020), renewed at the start of
// every cycle; a standby takes it within the lease's ttl plus one interval of the leader
// going silent, and the store refuses the old leader's writes.
//
// The engine sees only the CycleStore port (store/cycle_store.h): a cycle is lease, sweep,
// snapshot, policy::DecideCycle (policy/cycle.h), ApplyPlan in one transaction, then the
// capacity provider (decision 0041). Engine tests run it on the in-memory store
// (tests/testing/memory_cycle_store.h) as well as on PostgreSQL.
//
// Threading: Kick(), KickForNewWork(), Stats(), WaitForWork(), Wake() and EndWaits() are
// thread-safe; the cycle itself runs only on the engine's own thread. Asio stays out of this
// header.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "scheduler/engine/capacity_provider.h"
#include "scheduler/policy/policy.h"
#include "scheduler/store/cycle_store.h"

namespace frugal::engine {

struct EngineOptions {
  Seconds interval{2};
  // Which pending jobs a cycle reads (config max_pending_per_cycle, max_pending_per_team).
  store::PendingWindow pending{};
  CapacityProvider* capacity = nullptr;  // optional; must outlive the engine
  std::function<void()> alerts_fired = nullptr;  // optional: wakes the alert dispatcher
  // The leader lease (config leader_lease_ttl). Longer than `interval` plus a cycle's
  // work, or the leader loses it between renewals.
  std::chrono::milliseconds leader_lease_ttl{6000};
  // A cycle kicked for new work (KickForNewWork) starts at least this long after the
  // previous cycle ended (decision 0047): during a burst of submits each cycle takes what
  // came in the meantime instead of one cycle running per submit. The first submit after
  // a quiet spell is placed at once, and so is anything that frees capacity (Kick).
  std::chrono::milliseconds kick_spacing{10};
};

struct CycleStats {
  std::int64_t cycles = 0;         // completed cycles (as leader)
  std::int64_t jobs_started = 0;   // assignments applied since start
  bool leader = false;
  std::int64_t term = 0;           // the current leader term as last read (whoever holds it)
  std::string last_error;          // empty when the last cycle succeeded
};

class Engine {
 public:
  Engine(store::CycleStore& store, const policy::Policy& policy, EngineOptions options);
  ~Engine();  // Stop()s
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  void Start();  // starts the engine thread; the first cycle runs at once
  void Stop();   // finishes the cycle in progress, joins the thread, releases the lease
  void Kick();   // asks for a cycle now (coalesced): capacity or rules changed
  void KickForNewWork();  // asks for a cycle for new jobs, kick_spacing after the last
  CycleStats Stats() const;

  // Dispatch without waiting for a heartbeat (decision 0027). Each node has a generation
  // that changes once a cycle has committed assignments to it, and for every node when a
  // cycle committed stop orders or Wake() was called. A worker long-polls with the
  // generation it last saw; any change means "heartbeat now", so a generation that resets
  // with a restarted scheduler only costs one early heartbeat.
  //
  // Returns the node's generation as soon as it differs from `seen`, or when `timeout`
  // passes, or at once after EndWaits(). Thread-safe; blocks the caller only.
  std::int64_t WaitForWork(std::int64_t node_id, std::int64_t seen,
                           std::chrono::milliseconds timeout);
  void Wake();      // every node's generation changes (a running job was cancelled)
  void EndWaits();  // shutdown: every wait returns now, and later ones at once

  // Runs one cycle on the caller's thread. For tests and tools; never while Start()ed.
  Status RunCycleForTest();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::engine
