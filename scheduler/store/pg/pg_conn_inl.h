// Template bodies for pg_conn.h.
#pragma once

namespace frugal::store {

template <typename T, typename Fn>
StatusOr<T> InTransaction(PgPool& pool, Fn&& fn) {
  return InTransaction<T>(pool, "BEGIN", std::forward<Fn>(fn));
}

template <typename T, typename Fn>
StatusOr<T> InTransaction(PgPool& pool, const char* begin, Fn&& fn) {
  for (int attempt = 0;; ++attempt) {
    auto lease = pool.Acquire();
    if (!lease.ok()) return lease.status();
    PgConn& c = **lease;
    c.ResetCount();
    c.DeferBegin(begin);
    StatusOr<T> result = fn(c);
    if (c.begin_pending()) {  // fn sent nothing: there is no transaction to end
      c.ForgetBegin();
      return result;
    }
    if (!result.ok()) {
      // The first round trip, which carried BEGIN, found the connection dead: nothing ran.
      if (attempt < 3 && !c.healthy() && c.round_trips() == 1 && !c.timed_out()) continue;
      if (c.healthy()) (void)c.ExecScript("ROLLBACK");
      return result.status();
    }
    // fn may end the transaction itself, a COMMIT behind its last statements in one round
    // trip (decision 0057): nothing is left to commit then.
    if (c.reusable()) return result;
    auto commit = c.ExecScript("COMMIT");
    if (!commit.ok()) return commit.status();
    return result;
  }
}

template <typename T, typename Fn>
StatusOr<T> Autocommit(PgPool& pool, Repeat repeat, Fn&& fn) {
  for (int attempt = 0;; ++attempt) {
    auto lease = pool.Acquire();
    if (!lease.ok()) return lease.status();
    PgConn& c = **lease;
    StatusOr<T> result = fn(c);
    if (!result.ok() && repeat == Repeat::kReads && !c.healthy() && attempt < 3) continue;
    return result;
  }
}

}  // namespace frugal::store
