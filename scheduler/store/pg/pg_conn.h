// RAII wrappers over libpq: a connection with lazily prepared statements, a result, and a
// bounded pool. The only place libpq errors become Status (connection loss, timeouts and
// lock waits -> Unavailable, unique violation -> Conflict, other constraint violations ->
// FailedPrecondition).
//
// No call waits forever (issue 15): connecting gives up after 5 s, and with a statement
// timeout set, every statement is awaited for at most that plus 5 s, then cancelled and
// its connection marked broken (the pool discards it).
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
#include "scheduler/store/pg/pg_options.h"

namespace frugal::store {

using PgParam = std::optional<std::string>;  // nullopt = SQL NULL; text format

// One statement of a pipeline (PgConn::ExecPipeline): prepared under `name` as Exec does.
struct PgStatement {
  std::string name;
  std::string sql;
  std::vector<PgParam> params;
};

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
  // Connects with a 5 s timeout and applies `options`; Unavailable when the server cannot
  // be reached or does not answer.
  static StatusOr<std::unique_ptr<PgConn>> Connect(const std::string& conninfo,
                                                   PgConnOptions options = {});
  ~PgConn();

  // Runs a parameterised statement, preparing it under `name` on first use.
  StatusOr<PgResult> Exec(const std::string& name, const std::string& sql,
                          const std::vector<PgParam>& params = {});
  StatusOr<PgResult> Exec(const PgStatement& s) { return Exec(s.name, s.sql, s.params); }
  // Runs `statements` in order as Exec would, sent together in one pipeline (libpq's
  // pipeline mode), so they cost one round trip instead of one each; the results in the same
  // order. For statements whose parameters do not depend on each other's results. The first
  // failure is returned as Exec returns it, and the server skips the statements after it;
  // inside a transaction nothing of the pipeline then holds (the caller rolls back), outside
  // one each statement before it has committed on its own. Everything is sent before
  // anything is read: a statement that answers many rows goes after any large parameter, or
  // the send could wait on a server that waits for those rows to be read.
  StatusOr<std::vector<PgResult>> ExecPipeline(const std::vector<PgStatement>& statements);
  // Runs `sql` (which may hold several statements) without parameters: migrations, BEGIN.
  StatusOr<PgResult> ExecScript(const std::string& sql);

  // Holds `script` (BEGIN and any SET LOCAL, as statements separated by ';' with none inside
  // one) to be sent ahead of the next Exec, ExecPipeline or ExecScript, in the same round
  // trip (decision 0054): a transaction's BEGIN then costs no round trip of its own. Its
  // failure is that call's. Until then no transaction is open.
  void DeferBegin(const char* script) { begin_ = script; }
  // Whether the deferred BEGIN is still unsent; ForgetBegin drops it unsent.
  bool begin_pending() const { return begin_ != nullptr; }
  void ForgetBegin() { begin_ = nullptr; }

  // False once the connection broke or a statement outlived its deadline (the server may
  // still be running it): such a connection is never reused.
  bool healthy() const { return !broken_ && PQstatus(conn_) == CONNECTION_OK; }
  // Healthy and outside any transaction: safe to hand to the next user.
  bool reusable() const { return healthy() && PQtransactionStatus(conn_) == PQTRANS_IDLE; }
  // Round trips (Exec, ExecPipeline, ExecScript calls) since the last ResetCount(), and
  // whether one of them outlived its deadline: lets InTransaction retry safely when its very
  // first round trip found the connection dead.
  int round_trips() const { return round_trips_; }
  bool timed_out() const { return timed_out_; }
  void ResetCount() {
    round_trips_ = 0;
    timed_out_ = false;
  }
  // Idle here, but the server has ended the session (its FATAL notice or EOF is waiting on
  // the socket): the pool drops such a connection instead of handing it out.
  bool EndedByServer();

 private:
  PgConn(PGconn* c, PgConnOptions options) : conn_(c), options_(options) {}
  Status ToStatus(PGresult* r, const std::string& what);
  // Awaits the command just sent (or the send's failure, sent == false) as a result.
  StatusOr<PgResult> Finish(bool sent, const std::string& what);
  // Awaits the next command's results; nullptr (and the connection broken) on a timeout or
  // a broken connection, with `error` set to say which.
  PGresult* AwaitNext(const std::string& what, Status& error);

  PGconn* conn_;
  const PgConnOptions options_;
  bool broken_ = false;
  std::set<std::string> prepared_;
  const char* begin_ = nullptr;  // DeferBegin's script, until sent
  int round_trips_ = 0;
  bool timed_out_ = false;
};

class PgPool {
 public:
  PgPool(std::string conninfo, int max_size, PgConnOptions options = DefaultPoolOptions());
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

  // An idle connection (checked: not ended by the server), a new one, or Unavailable after
  // waiting `wait` for one.
  StatusOr<Lease> Acquire(std::chrono::milliseconds wait = std::chrono::seconds(5));
  const std::string& conninfo() const { return conninfo_; }
  const PgConnOptions& options() const { return options_; }

 private:
  void Release(std::unique_ptr<PgConn> c);

  const std::string conninfo_;
  const int max_size_;
  const PgConnOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::unique_ptr<PgConn>> idle_;  // guarded by mu_
  int open_ = 0;                                // guarded by mu_
};

// Runs `fn(conn)` inside BEGIN ... COMMIT on a pooled connection; rolls back on error.
// BEGIN is deferred (PgConn::DeferBegin): it travels with fn's first statement, and a
// transaction in which fn sent nothing is neither begun nor committed. If that first round
// trip fails because a pooled connection had died (the server restarted or ended the
// session), fn runs again on another connection, up to three times: nothing was applied,
// so nothing can repeat, provided fn changes nothing outside the transaction before its
// first statement's answer. fn may end the transaction itself with a COMMIT in its last
// pipeline; it is then not committed again.
template <typename T, typename Fn>
StatusOr<T> InTransaction(PgPool& pool, Fn&& fn);
// The same, begun by the script `begin` instead of a bare BEGIN, in the same round trip:
// "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL plan_cache_mode = ...".
template <typename T, typename Fn>
StatusOr<T> InTransaction(PgPool& pool, const char* begin, Fn&& fn);

// Whether `fn` of Autocommit may run again after a failure: kReads only when it reads.
enum class Repeat { kReads, kNever };

// Runs `fn(conn)` on a pooled connection without BEGIN and COMMIT: each statement commits
// on its own, with its own snapshot. For a single statement, or for statements whose
// facts cannot change between them (a job's team, rows that are never deleted); it saves
// COMMIT's round trip (and BEGIN's, before decision 0054 sent it with the first
// statement), half the cost of a one-statement read (decision 0039). With Repeat::kReads
// a failure that left the connection unusable (the server restarted or ended the session,
// or a statement outlived its deadline) is retried on another connection, up to three
// times: on a hung server a read can so wait four deadlines. A write is never repeated,
// since the server may have committed it.
template <typename T, typename Fn>
StatusOr<T> Autocommit(PgPool& pool, Repeat repeat, Fn&& fn);

}  // namespace frugal::store

#include "scheduler/store/pg/pg_conn_inl.h"
