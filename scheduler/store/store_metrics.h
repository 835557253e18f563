// What GET /metrics reads from the database at scrape time (JobStore::LoadMetrics): queue
// depth, lifetime counts of jobs and attempts, pool capacity and use, and money. Counts come
// from the rows themselves (jobs, attempts, nodes, the ledger), so they survive restarts,
// agree with every other view of the database, and never go down.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/money.h"

namespace frugal::store {

struct StoreMetrics {
  // Jobs not yet ended (pending, held, running), by state, team and priority class.
  struct Queue {
    std::string state, team, priority;
    std::int64_t jobs = 0;
  };
  // Every job ever submitted, by team, and those ended, by final state and team.
  struct TeamCount {
    std::string team, state;  // state empty for submissions
    std::int64_t jobs = 0;
  };
  // Attempts by pool (the pool they were billed to): started, ended by end_reason,
  // preempted by cause: "priority", "migrate_off_spot", "migrate_to_spot" (the scheduler's
  // own stops), "idle_reclaim" (the idle guardrail's requeue) or "node" (the node was
  // reclaimed or shut down under the attempt), and the idle guardrail's stop orders by
  // action: "requeue" (it had a checkpoint) or "stop" (it had none; ends cancelled).
  struct AttemptCount {
    std::string pool, reason;  // reason empty for starts
    std::int64_t attempts = 0;
  };
  struct PoolUse {
    std::string pool, capacity_kind;
    std::int64_t max_gpus = 0;        // the pool's configured ceiling
    std::int64_t allocated_gpus = 0;  // on live or draining nodes: paid for now
    std::int64_t busy_gpus = 0;       // held by active attempts
    std::int64_t live_nodes = 0, draining_nodes = 0;
    // Paid for now: a reserved pool's committed_gpus, else the GPUs of its registered
    // nodes (lost ones too: a reserved machine is paid while down); other pools: allocated.
    std::int64_t paid_gpus = 0;
    std::int64_t idle_nodes = 0;  // live, not drained, running nothing (some of live_nodes)
  };
  // Money by team and pool: everything billed plus running attempts up to now (the same
  // function as GET /v1/reports/cost), lost work, and the rate of running attempts.
  struct Spend {
    std::string team, pool;
    Micros spend = 0;
    Micros wasted = 0;
    Micros rate_per_hour = 0;
  };

  std::vector<Queue> queue;
  std::vector<TeamCount> submitted;
  std::vector<TeamCount> finished;
  std::vector<AttemptCount> started;
  std::vector<AttemptCount> ended;
  std::vector<AttemptCount> preempted;
  std::vector<AttemptCount> idle_stops;  // reason: the action
  std::vector<PoolUse> pools;
  std::vector<Spend> spend;
};

}  // namespace frugal::store
