// Waiting for libpq results with a deadline (issue 15). libpq's blocking calls wait forever
// on a server that accepted the query and then stopped (SIGSTOP, a hung disk, a partition
// that drops packets); these helpers poll the socket instead and give up at a deadline.
// Internal to scheduler/store/pg.
#pragma once

#include <libpq-fe.h>

#include <chrono>

namespace frugal::store {

struct PgWaitResult {
  // The last result of the command, or its first failed one; nullptr when the connection
  // broke without a result or the deadline passed. The caller owns it (PQclear).
  PGresult* result = nullptr;
  bool timed_out = false;
};

// Collects every result of the command just sent on `conn` (PQsend*), waiting no later than
// `deadline`. On timeout the server is asked to cancel (in the background: PQcancel itself
// can block on a stopped server) and the connection must be discarded.
PgWaitResult AwaitResult(PGconn* conn, std::chrono::steady_clock::time_point deadline);

// True when an idle connection has anything to read: the server ended the session
// (pg_terminate_backend, a restart) and sent its FATAL notice. Such a connection must not
// be handed out: its first statement would fail for a reason the caller cannot retry.
bool IdleConnectionBroken(PGconn* conn);

}  // namespace frugal::store
