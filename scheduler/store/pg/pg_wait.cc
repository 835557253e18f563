#include "scheduler/store/pg/pg_wait.h"

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <thread>

namespace frugal::store {

namespace {

using SteadyClock = std::chrono::steady_clock;

// Cancels in flight; each may block until the server wakes, so keep only a few.
std::atomic<int> g_cancels{0};
constexpr int kMaxCancels = 4;

void CancelInBackground(PGconn* conn) {
  PGcancel* cancel = PQgetCancel(conn);
  if (cancel == nullptr) return;
  if (g_cancels.fetch_add(1) >= kMaxCancels) {
    // The server's statement_timeout ends the statement anyway; this only frees it sooner.
    g_cancels.fetch_sub(1);
    PQfreeCancel(cancel);
    return;
  }
  std::thread([cancel] {
    char err[256];
    (void)PQcancel(cancel, err, sizeof err);
    PQfreeCancel(cancel);
    g_cancels.fetch_sub(1);
  }).detach();
}

bool Failed(PGresult* r) {
  auto st = PQresultStatus(r);
  return st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_EMPTY_QUERY;
}

}  // namespace

PgWaitResult AwaitResult(PGconn* conn, SteadyClock::time_point deadline) {
  PgWaitResult out;
  while (true) {
    bool input_ok = true;
    while (input_ok && PQisBusy(conn)) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
      if (left.count() <= 0) {
        CancelInBackground(conn);
        if (out.result) PQclear(out.result);
        return {nullptr, true};
      }
      pollfd p{PQsocket(conn), POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(std::min<long long>(left.count(), 1 << 30))) < 0 &&
          errno != EINTR) {
        input_ok = false;
      }
      // A broken socket: PQgetResult below returns the error without blocking.
      if (input_ok && !PQconsumeInput(conn)) input_ok = false;
    }
    PGresult* r = PQgetResult(conn);
    if (r == nullptr) break;
    if (out.result != nullptr && Failed(out.result)) {
      PQclear(r);  // keep the first failure: it names the cause
    } else {
      if (out.result) PQclear(out.result);
      out.result = r;
    }
    if (!input_ok && PQstatus(conn) != CONNECTION_OK) break;
  }
  return out;
}

bool IdleConnectionBroken(PGconn* conn) {
  if (PQstatus(conn) != CONNECTION_OK) return true;
  pollfd p{PQsocket(conn), POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  // Readable while idle: a FATAL notice, or EOF. Either way the session is over, except for
  // a stray NOTIFY or parameter change, which PQconsumeInput absorbs.
  if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK) return true;
  pollfd again{PQsocket(conn), POLLIN, 0};
  return ::poll(&again, 1, 0) > 0 || PQisBusy(conn);
}

}  // namespace frugal::store
