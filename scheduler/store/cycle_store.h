// The CycleStore port: what the scheduling engine asks of durable state, and nothing else:
// leadership, the lost-node sweep, the cycle's snapshot, and applying its plan. The
// engine (engine/engine.h) sees only this port; PgStore implements it over PostgreSQL and
// tests/testing/memory_cycle_store.h in memory, and one contract suite
// (tests/scheduler/store/cycle_store_contract_test.cc) runs against both.
//
// Threading: implementations are thread-safe; the engine calls from its one strand, and
// the API's advisor reads snapshots concurrently. Every method is one transaction but
// SweepAndLoadSnapshot.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/store/budgets.h"

namespace frugal::store {

// A node the lost-node sweep declared lost, and the attempts it ended there.
struct LostNode {
  std::string name;
  std::vector<model::AttemptId> attempts;
  std::vector<model::JobId> jobs;
};

// What a cycle reads first: the nodes the lost-node sweep declared lost, and the snapshot
// taken after the sweep.
struct CycleRead {
  std::vector<LostNode> lost;
  model::Snapshot snapshot;
};

// What TryLeadership found. `term` is the current term in the database whoever holds it
// (0: never taken); `leader` whether this store holds it after the call.
struct LeaderStatus {
  bool leader = false;
  std::int64_t term = 0;
  bool acquired = false;    // this call started a new term held by this store
  std::string lost_reason;  // set when this call ended a term this store held: why
};

// Which pending jobs a snapshot reads (CycleStore::LoadSnapshot): per team, its first
// `per_team` that may start and its first `per_team` waiting on a dependency; of all those,
// `max_pending`. Both at least 1. `focus`, when set and pending, is added in its place in
// claim order if the window does not reach it, whatever the window's filters (a throttled
// array's task beyond its room included): `frugal why` asks about that one job.
struct PendingWindow {
  int max_pending = 10000;
  int per_team = 1000;
  std::optional<model::JobId> focus;
};

// The error of an engine write refused by the fence (FailedPrecondition "not the leader: ...").
Status NotLeader(const std::string& why);
bool IsNotLeader(const Status& st);

// What ApplyPlan did.
struct AppliedPlan {
  int started = 0;                  // jobs started (a gang counts once)
  int idle_stops = 0;               // idle stop orders written
  std::vector<BudgetAlert> alerts;  // budget alerts recorded by this transaction
};

class CycleStore {
 public:
  virtual ~CycleStore() = default;

  // Nodes whose lease (database time) expired become lost; their active attempts end
  // node_lost (or preempted, after a spot notice) and their jobs are pending again with
  // their checkpoints. Returns each node declared lost, with what it ended.
  virtual StatusOr<std::vector<LostNode>> SweepLostNodes() = 0;
  // Leadership is a lease in database time with a fencing term (decision 0020). Renews
  // the lease for `ttl` if this store holds the current term and it has not expired;
  // otherwise takes it with a new term if it has expired (or was never taken). A renewal
  // that finds the term ended, or fails, gives the term up here at once: the engine
  // writes below refuse until a later call takes a new one. Errors are the database's.
  virtual StatusOr<LeaderStatus> TryLeadership(std::chrono::milliseconds ttl) = 0;
  // Ends the lease now if this store holds it (a clean shutdown), so a standby or a
  // restarted scheduler need not wait for it to expire. Ok when it held none.
  virtual Status ReleaseLeadership() = 0;
  // The engine's writes (SweepLostNodes, ApplyPlan, and KeeperStore::FireBudgetAlerts) check
  // in their own transaction, first, that this store holds the current term and its lease
  // is unexpired (the row stays locked FOR SHARE until commit, so no takeover
  // interleaves). Otherwise they write nothing and return NotLeader(): IsNotLeader().
  // SweepLostNodes first reads, without a transaction, whether any lease ran out and
  // whether the term still holds; with nothing to sweep and the term held it answers
  // empty from that read and writes nothing (decision 0048).

  // Pending jobs, active attempts (with their idle state and team idle policy), live nodes,
  // pools, quotas, budgets, the idle settings, and the database's now(). The pending jobs
  // are each team's first `window.per_team` in claim order (priority, then id) that may
  // start, and its first `window.per_team` that wait on an open dependency; of those the
  // first `window.max_pending`, every team's first before any team's second, returned in
  // claim order (decision 0035). A team with a deep queue cannot hide another team's jobs
  // from the cycle, and a cycle reads hundreds of rows, not the whole queue.
  virtual StatusOr<model::Snapshot> LoadSnapshot(const PendingWindow& window) = 0;
  // SweepLostNodes, then LoadSnapshot: a cycle's reads, with the same answers and errors.
  // A store may take them in fewer round trips. PgStore sends the sweep's first read
  // with the snapshot's and takes the snapshot alone when that read finds no lease run
  // out and its term held; otherwise it sweeps, then takes the snapshot again (decision
  // 0057). Up to three transactions, then, where each of the two is one.
  virtual StatusOr<CycleRead> SweepAndLoadSnapshot(const PendingWindow& window) {
    CycleRead read;
    ASSIGN_OR_RETURN(read.lost, SweepLostNodes());
    ASSIGN_OR_RETURN(read.snapshot, LoadSnapshot(window));
    return read;
  }
  // Applies the plan in one transaction, in this order: assignments, waits, holds, the idle
  // actions (warning events, once per attempt, and the idle guardrail's stop orders), the
  // policy's stops, and then the budget alerts that teams' spending has reached (one row per
  // team, period and threshold, with its webhook delivery pending; as
  // KeeperStore::FireBudgetAlerts). What changed since the snapshot is skipped, not refused:
  // an assignment whose job is no longer pending or whose node is no longer live, a wait or
  // hold of a job that is not pending, a stop or idle order for an attempt that ended or
  // already has a stop order. NotLeader (writing nothing) if this store's term ended; any
  // error writes nothing either, idle orders and alerts included (decision 0041).
  virtual StatusOr<AppliedPlan> ApplyPlan(const model::Plan& plan) = 0;
};

}  // namespace frugal::store
