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
    auto begun = c.ExecScript(begin);
    if (!begun.ok()) {
      if (attempt < 3 && !c.healthy()) continue;
      return begun.status();
    }
    StatusOr<T> result = fn(c);
    if (!result.ok()) {
      if (c.healthy()) (void)c.ExecScript("ROLLBACK");
      return result.status();
    }
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
