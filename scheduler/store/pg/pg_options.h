// Connection settings of the PostgreSQL adapter, without libpq: what the composition root
// passes to PgStore (pg_store.h) and PgConn (pg_conn.h).
#pragma once

#include <chrono>

namespace frugal::store {

// Per-connection limits. Zero means none (PostgreSQL's defaults): what migrations use, since
// a schema change may legitimately wait for a lock or run long. The pool's connections (the
// API and the engine) always have both.
struct PgConnOptions {
  std::chrono::milliseconds statement_timeout{0};  // server side; client waits this + 5 s
  std::chrono::milliseconds lock_timeout{0};       // server side
};

// What the scheduler's pool uses unless configured (db_statement_timeout, db_lock_timeout):
// long enough for the heaviest report, short enough that a stuck database frees the API.
inline PgConnOptions DefaultPoolOptions() {
  return {std::chrono::seconds(30), std::chrono::seconds(10)};
}

}  // namespace frugal::store
