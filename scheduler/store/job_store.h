// The JobStore port: everything the API and the engine ask of durable state, as roles
// (decision 0042):
//   CycleStore  (cycle_store.h)  the engine's: leadership, sweep, snapshot, apply;
//   QueueStore  (queue_store.h)  the job queue: submit, arrays, list, get, cancel;
//   AdminStore  (admin_store.h)  teams, quotas, budgets, tokens, audit, pools, nodes,
//                                guardrails, approvals;
//   ReportStore (report_store.h) metrics and the dashboard's views;
//   KeeperStore (keeper_store.h) the background threads' calls.
// JobStore adds readiness and authentication. WorkerStore, CostStore and InstanceStore are
// ports of their own. The PostgreSQL adapter (pg/pg_store.h) implements them all and is
// the only code that knows SQL. In tests, tests/testing/memory_cycle_store.h and
// memory_queue_store.h implement CycleStore and QueueStore in memory, held to PgStore's
// contract by the typed suites in tests/scheduler/store/*_contract_test.cc.
//
// Who depends on what: the engine takes a CycleStore&, the background threads a
// KeeperStore&, the submit service and the API's routes a JobStore& (a route file serves
// one role, but a request may touch two: a submit reads the pools and writes the queue).
// Take the narrowest port that serves: a new caller of JobStore is a reason to ask why.
//
// Ownership: callers hold references; the composition root (scheduler/app/main.cc) owns
// the one PgStore and outlives every user of it.
// Threading: implementations are thread-safe; HTTP handler threads and the engine's
// strand call them concurrently. Every method is one transaction: it happens whole or not
// at all, and a failure (Unavailable, a statement timeout) leaves nothing half-written.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/store/admin_store.h"
#include "scheduler/store/cycle_store.h"
#include "scheduler/store/keeper_store.h"
#include "scheduler/store/principal.h"
#include "scheduler/store/queue_store.h"
#include "scheduler/store/report_store.h"

namespace frugal::store {

class JobStore : public CycleStore,
                 public QueueStore,
                 public AdminStore,
                 public ReportStore,
                 public KeeperStore {
 public:
  ~JobStore() override = default;

  // Readiness: Unavailable when the database cannot be reached.
  virtual Status Ping() = 0;

  // The active (not revoked) token with this SHA-256, or Unauthenticated.
  virtual StatusOr<Principal> Authenticate(const std::string& token_sha256) = 0;
};

}  // namespace frugal::store
