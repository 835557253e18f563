// RAII wrappers over libpq: a connection with lazily prepared statements, a result, and a
// bounded pool. The only place libpq errors become Status (connection loss -> Unavailable,
// unique violation -> Conflict, other constraint violations -> FailedPrecondition).
//
// Threading: a PgConn is used by one thread at a time (the one holding its lease);
// PgPool is thread-safe.
#pragma once

#include <libpq-fe.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::store {

using PgParam = std::optional<std::string>;  // nullopt = SQL NULL; text format

class PgResult {
 public:
  explicit PgResult(PGresult* r) : r_(r, &PQclear) {}
  int rows() const { return PQntuples(r_.get()); }
  bool IsNull(int row, int col) const { return PQgetisnull(r_.get(), row, col) != 0; }
  std::string Text(int row, int col) const { return PQgetvalue(r_.get(), row, col); }
  std::int64_t Int(int row, int col) const;
  double Double(int row, int col) const;
  bool Bool(int row, int col) const { return Text(row, col) == "t"; }
  std::optional<std::int64_t> OptInt(int row, int col) const;

 private:
  std::unique_ptr<PGresult, decltype(&PQclear)> r_;
};

class PgConn {
 public:
  // Connects with a 5 s timeout; Unavailable when the server cannot be reached.
  static StatusOr<std::unique_ptr<PgConn>> Connect(const std::string& conninfo);
  ~PgConn();

  // Runs a parameterised statement, preparing it under `name` on first use.
  StatusOr<PgResult> Exec(const std::string& name, const std::string& sql,
                          const std::vector<PgParam>& params = {});
  // Runs `sql` (which may hold several statements) without parameters: migrations, BEGIN.
  StatusOr<PgResult> ExecScript(const std::string& sql);

  bool healthy() const { return PQstatus(conn_) == CONNECTION_OK; }
  // Healthy and outside any transaction: safe to hand to the next user.
  bool reusable() const { return healthy() && PQtransactionStatus(conn_) == PQTRANS_IDLE; }
  // Statements sent since the last ResetCount(); lets callers retry safely when the very
  // first statement found the connection dead.
  int statements_sent() const { return statements_sent_; }
  void ResetCount() { statements_sent_ = 0; }

 private:
  explicit PgConn(PGconn* c) : conn_(c) {}
  Status ToStatus(PGresult* r, const std::string& what);

  PGconn* conn_;
  std::set<std::string> prepared_;
  int statements_sent_ = 0;
};

class PgPool {
 public:
  PgPool(std::string conninfo, int max_size);
  ~PgPool();

  class Lease {
   public:
    Lease(PgPool* pool, std::unique_ptr<PgConn> c) : pool_(pool), conn_(std::move(c)) {}
    Lease(Lease&&) = default;
    ~Lease();
    PgConn& operator*() { return *conn_; }
    PgConn* operator->() { return conn_.get(); }

   private:
    PgPool* pool_;
    std::unique_ptr<PgConn> conn_;
  };

  // An idle connection, a new one, or Unavailable after waiting `wait` for one.
  StatusOr<Lease> Acquire(std::chrono::milliseconds wait = std::chrono::seconds(5));
  const std::string& conninfo() const { return conninfo_; }

 private:
  void Release(std::unique_ptr<PgConn> c);

  const std::string conninfo_;
  const int max_size_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConn>> idle_;  // guarded by mu_
  int open_ = 0;                                // guarded by mu_
};

// Runs `fn(conn)` inside BEGIN ... COMMIT on a pooled connection; rolls back on error.
// If the first statement fails because a pooled connection had died (the server
// restarted), retries once on a fresh connection: nothing was sent, so nothing can repeat.
template <typename T, typename Fn>
StatusOr<T> InTransaction(PgPool& pool, Fn&& fn);

}  // namespace frugal::store

#include "scheduler/store/pg/pg_conn_inl.h"
