#include "scheduler/store/pg/pg_conn.h"

#include <cstdlib>
#include <cstring>

#include "scheduler/store/pg/pg_wait.h"

namespace frugal::store {

std::int64_t PgResult::Int(int row, int col) const {
  return std::strtoll(PQgetvalue(r_.get(), row, col), nullptr, 10);
}

double PgResult::Double(int row, int col) const {
  return std::strtod(PQgetvalue(r_.get(), row, col), nullptr);
}

std::optional<std::int64_t> PgResult::OptInt(int row, int col) const {
  if (IsNull(row, col)) return std::nullopt;
  return Int(row, col);
}

namespace {

using SteadyClock = std::chrono::steady_clock;

// Beyond the server's own statement_timeout: the server should answer first (57014); this
// only catches a server that cannot answer at all.
constexpr std::chrono::seconds kClientMargin{5};

}  // namespace

StatusOr<std::unique_ptr<PgConn>> PgConn::Connect(const std::string& conninfo,
                                                  PgConnOptions options) {
  // `conninfo` is either form libpq knows: "host=... dbname=..." or a URI
  // ("postgresql://user@host:port/db?sslmode=..."). Text cannot be appended to a URI, so
  // the defaults go in as parameters before it: expand_dbname=1 expands the string in
  // place of `dbname`, and a value it sets itself (say connect_timeout) wins.
  const char* const keys[] = {"connect_timeout", "application_name", "dbname", nullptr};
  const char* const values[] = {"5", "frugal", conninfo.c_str(), nullptr};
  PGconn* c = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return Unavailable("database unavailable: " + msg);
  }
  // Notices (e.g. "relation already exists, skipping") are not errors; keep stderr quiet.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  std::unique_ptr<PgConn> conn(new PgConn(c, options));
  // SET, not the `options` conninfo key: database_url may be a URI, which a key cannot be
  // appended to. Bounded like any statement: the server may hang after the handshake.
  // Every connection (decision 0025): no JIT, whose compile time (about 50 to 400 ms) was
  // most of a cycle's snapshot read, for queries that run in milliseconds.
  std::string set = "SET jit = off";
  if (options.statement_timeout.count() > 0 || options.lock_timeout.count() > 0) {
    set += "; SET statement_timeout = " + std::to_string(options.statement_timeout.count()) +
           "; SET lock_timeout = " + std::to_string(options.lock_timeout.count());
  }
  RETURN_IF_ERROR(conn->ExecScript(set).status());
  return conn;
}

bool PgConn::EndedByServer() { return broken_ || IdleConnectionBroken(conn_); }

PGresult* PgConn::AwaitNext(const std::string& what, Status& error) {
  auto deadline = SteadyClock::time_point::max();
  if (options_.statement_timeout.count() > 0) {
    deadline = SteadyClock::now() + options_.statement_timeout + kClientMargin;
  }
  PgWaitResult w = AwaitResult(conn_, deadline);
  if (w.timed_out) {
    broken_ = true;
    timed_out_ = true;
    error = Unavailable("database unavailable: no answer within " +
                        std::to_string((options_.statement_timeout + kClientMargin).count()) +
                        " ms (" + what + ")");
    return nullptr;
  }
  if (w.result == nullptr) {
    broken_ = true;
    error = ToStatus(nullptr, what);
  }
  return w.result;
}

StatusOr<PgResult> PgConn::Finish(bool sent, const std::string& what) {
  if (!sent) {
    broken_ = true;
    return ToStatus(nullptr, what);
  }
  Status error = Status::Ok();
  PGresult* r = AwaitNext(what, error);
  if (r == nullptr) return error;
  auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return ToStatus(r, what);
  return PgResult(r);
}

PgConn::~PgConn() { PQfinish(conn_); }

Status PgConn::ToStatus(PGresult* r, const std::string& what) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string sqlstate = state ? state : "";
  std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  // Data and constraint errors reach API clients: only the primary line, which names the
  // constraint but not the values (DETAIL and CONTEXT may quote parameters).
  const char* primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  if (primary && (sqlstate.rfind("22", 0) == 0 || sqlstate.rfind("23", 0) == 0 ||
                  sqlstate.rfind("FR", 0) == 0))
    msg = primary;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (r) PQclear(r);
  // No SQLSTATE: libpq's own error, i.e. the connection broke (a killed backend, a restart)
  // whatever PQstatus says yet. 57014: statement_timeout; 55P03: lock_timeout.
  if (sqlstate.empty()) broken_ = true;
  if (sqlstate.empty() || PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 ||
      sqlstate.rfind("57P", 0) == 0 || sqlstate.rfind("53", 0) == 0 || sqlstate == "40001" ||
      sqlstate == "40P01" || sqlstate == "57014" || sqlstate == "55P03") {
    return Unavailable("database unavailable: " + msg);
  }
  if (sqlstate == "23505") return Conflict(what + ": " + msg);
  // Class FR: raised by Frugal's own functions (the leader fence, migration 0031), whose
  // message is the whole answer.
  if (sqlstate.rfind("FR", 0) == 0) return FailedPrecondition(msg);
  if (sqlstate.rfind("23", 0) == 0 || sqlstate.rfind("22", 0) == 0) {
    return FailedPrecondition(what + ": " + msg);
  }
  return Internal(what + " failed [" + sqlstate + "]: " + msg);
}

StatusOr<PgResult> PgConn::Exec(const std::string& name, const std::string& sql,
                                const std::vector<PgParam>& params) {
  // With a deferred BEGIN, both go in one pipeline: one round trip.
  if (begin_ != nullptr) {
    ASSIGN_OR_RETURN(auto r, ExecPipeline({{name, sql, params}}));
    return std::move(r.front());
  }
  // libpq passes text parameters as C strings: a NUL would silently cut the value short.
  for (const auto& p : params)
    if (p && p->find('\0') != std::string::npos)
      return InvalidArgument("text must not contain NUL characters (\\u0000)");
  ++round_trips_;
  if (!prepared_.count(name)) {
    RETURN_IF_ERROR(
        Finish(PQsendPrepare(conn_, name.c_str(), sql.c_str(), 0, nullptr) == 1, name).status());
    prepared_.insert(name);
  }
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  return Finish(PQsendQueryPrepared(conn_, name.c_str(), static_cast<int>(values.size()),
                                    values.data(), nullptr, nullptr, 0) == 1,
                name);
}

StatusOr<std::vector<PgResult>> PgConn::ExecPipeline(const std::vector<PgStatement>& statements) {
  for (const auto& s : statements)
    for (const auto& p : s.params)
      if (p && p->find('\0') != std::string::npos)
        return InvalidArgument("text must not contain NUL characters (\\u0000)");
  std::vector<PgResult> out;
  if (statements.empty()) return out;
  ++round_trips_;
  if (PQenterPipelineMode(conn_) != 1) {
    broken_ = true;
    return ToStatus(nullptr, statements.front().name);
  }
  // A deferred BEGIN goes first, a statement at a time, unnamed (nothing to prepare).
  std::vector<std::string> begin;
  if (begin_ != nullptr) {
    for (const char* p = begin_;; ++p) {
      const char* end = std::strchr(p, ';');
      std::string statement(p, end ? end : p + std::strlen(p));
      if (statement.find_first_not_of(" \t\n") != std::string::npos)
        begin.push_back(std::move(statement));
      if (!end) break;
      p = end;
    }
    begin_ = nullptr;
  }
  // Each statement not yet prepared is prepared once, ahead of its first execution.
  std::vector<bool> preparing(statements.size(), false);
  std::set<std::string> named;
  bool sent = true;
  for (std::size_t i = 0; i < begin.size() && sent; ++i)
    sent =
        PQsendQueryParams(conn_, begin[i].c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0) == 1;
  for (std::size_t i = 0; i < statements.size() && sent; ++i) {
    const PgStatement& s = statements[i];
    if (!prepared_.count(s.name) && named.insert(s.name).second) {
      preparing[i] = true;
      sent = PQsendPrepare(conn_, s.name.c_str(), s.sql.c_str(), 0, nullptr) == 1;
    }
    std::vector<const char*> values;
    values.reserve(s.params.size());
    for (const auto& p : s.params) values.push_back(p ? p->c_str() : nullptr);
    sent = sent && PQsendQueryPrepared(conn_, s.name.c_str(), static_cast<int>(values.size()),
                                       values.data(), nullptr, nullptr, 0) == 1;
  }
  if (!sent || PQpipelineSync(conn_) != 1) {
    broken_ = true;
    return ToStatus(nullptr, statements.front().name);
  }
  // Every result is read, up to the sync, whatever failed: the connection is then idle
  // again. After a failure the server answers the rest "aborted", which names no cause.
  Status first = Status::Ok();
  for (std::size_t i = 0; i < begin.size(); ++i) {
    Status error = Status::Ok();
    PGresult* r = AwaitNext("BEGIN", error);
    if (r == nullptr) return error;
    const auto st = PQresultStatus(r);
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_PIPELINE_ABORTED ||
        !first.ok()) {
      PQclear(r);
    } else {
      first = ToStatus(r, "BEGIN");
    }
  }
  for (std::size_t i = 0; i < statements.size(); ++i) {
    const std::string& what = statements[i].name;
    for (int step = preparing[i] ? 0 : 1; step < 2; ++step) {
      Status error = Status::Ok();
      PGresult* r = AwaitNext(what, error);
      if (r == nullptr) return error;
      const auto st = PQresultStatus(r);
      if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
        if (step == 0) {
          prepared_.insert(what);
          PQclear(r);
        } else {
          out.emplace_back(r);
        }
      } else if (st == PGRES_PIPELINE_ABORTED || !first.ok()) {
        PQclear(r);
      } else {
        first = ToStatus(r, what);
      }
    }
  }
  Status error = Status::Ok();
  PGresult* sync = AwaitNext(statements.front().name, error);
  if (sync == nullptr) return error;
  const bool synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC;
  PQclear(sync);
  if (!synced || PQexitPipelineMode(conn_) != 1) broken_ = true;
  if (!first.ok()) return first;
  if (broken_) {
    const std::string& what = statements.front().name;
    return Unavailable("database unavailable: a pipeline did not end (" + what + ")");
  }
  return out;
}

StatusOr<PgResult> PgConn::ExecScript(const std::string& sql) {
  ++round_trips_;
  if (begin_ != nullptr) {
    const std::string script = std::string(begin_) + "; " + sql;
    begin_ = nullptr;
    return Finish(PQsendQuery(conn_, script.c_str()) == 1, "statement");
  }
  return Finish(PQsendQuery(conn_, sql.c_str()) == 1, "statement");
}

PgPool::PgPool(std::string conninfo, int max_size, PgConnOptions options)
    : conninfo_(std::move(conninfo)), max_size_(max_size), options_(options) {}

PgPool::~PgPool() = default;

PgPool::Lease::~Lease() {
  if (conn_) pool_->Release(std::move(conn_));
}

StatusOr<PgPool::Lease> PgPool::Acquire(std::chrono::milliseconds wait) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, wait, [&] { return !idle_.empty() || open_ < max_size_; })) {
      return Unavailable("database busy: no free connection within " +
                         std::to_string(wait.count()) + " ms");
    }
    // Skip idle connections the server has ended: after pg_terminate_backend or a restart
    // every idle one is dead, and handing them out in turn would fail request after request.
    while (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      if (!c->EndedByServer()) return Lease(this, std::move(c));
      --open_;
    }
    ++open_;
  }
  auto c = PgConn::Connect(conninfo_, options_);
  if (!c.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    cv_.notify_one();
    return c.status();
  }
  return Lease(this, std::move(c).value());
}

void PgPool::Release(std::unique_ptr<PgConn> c) {
  // A begin still unsent (its function threw before any statement) must not ride with the
  // next user's first statement, which would then never commit.
  c->ForgetBegin();
  std::lock_guard<std::mutex> lock(mu_);
  if (c->reusable()) {
    idle_.push_back(std::move(c));
  } else {
    --open_;  // dropped: the next Acquire reconnects
  }
  cv_.notify_one();
}

}  // namespace frugal::store
