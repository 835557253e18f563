#include "scheduler/store/pg/pg_conn.h"

#include <cstdlib>
#include <cstring>

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

StatusOr<std::unique_ptr<PgConn>> PgConn::Connect(const std::string& conninfo) {
  std::string info = conninfo + " connect_timeout=5 application_name=frugal";
  PGconn* c = PQconnectdb(info.c_str());
  if (PQstatus(c) != CONNECTION_OK) {
    std::string msg = PQerrorMessage(c);
    PQfinish(c);
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    return Unavailable("database unavailable: " + msg);
  }
  // Notices (e.g. "relation already exists, skipping") are not errors; keep stderr quiet.
  PQsetNoticeProcessor(c, [](void*, const char*) {}, nullptr);
  return std::unique_ptr<PgConn>(new PgConn(c));
}

PgConn::~PgConn() { PQfinish(conn_); }

Status PgConn::ToStatus(PGresult* r, const std::string& what) {
  const char* state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : nullptr;
  std::string sqlstate = state ? state : "";
  std::string msg = r ? PQresultErrorMessage(r) : PQerrorMessage(conn_);
  // Data and constraint errors reach API clients: only the primary line, which names the
  // constraint but not the values (DETAIL and CONTEXT may quote parameters).
  const char* primary = r ? PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  if (primary && (sqlstate.rfind("22", 0) == 0 || sqlstate.rfind("23", 0) == 0)) msg = primary;
  while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
  if (r) PQclear(r);
  if (PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 ||
      sqlstate.rfind("57P", 0) == 0 || sqlstate.rfind("53", 0) == 0 || sqlstate == "40001" ||
      sqlstate == "40P01") {
    return Unavailable("database unavailable: " + msg);
  }
  if (sqlstate == "23505") return Conflict(what + ": " + msg);
  if (sqlstate.rfind("23", 0) == 0 || sqlstate.rfind("22", 0) == 0) {
    return FailedPrecondition(what + ": " + msg);
  }
  return Internal(what + " failed [" + sqlstate + "]: " + msg);
}

StatusOr<PgResult> PgConn::Exec(const std::string& name, const std::string& sql,
                                const std::vector<PgParam>& params) {
  // libpq passes text parameters as C strings: a NUL would silently cut the value short.
  for (const auto& p : params)
    if (p && p->find('\0') != std::string::npos)
      return InvalidArgument("text must not contain NUL characters (\\u0000)");
  ++statements_sent_;
  if (!prepared_.count(name)) {
    PGresult* r = PQprepare(conn_, name.c_str(), sql.c_str(), 0, nullptr);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) return ToStatus(r, name);
    PQclear(r);
    prepared_.insert(name);
  }
  std::vector<const char*> values;
  values.reserve(params.size());
  for (const auto& p : params) values.push_back(p ? p->c_str() : nullptr);
  PGresult* r = PQexecPrepared(conn_, name.c_str(), static_cast<int>(values.size()),
                               values.data(), nullptr, nullptr, 0);
  auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return ToStatus(r, name);
  return PgResult(r);
}

StatusOr<PgResult> PgConn::ExecScript(const std::string& sql) {
  ++statements_sent_;
  PGresult* r = PQexec(conn_, sql.c_str());
  auto st = PQresultStatus(r);
  if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) return ToStatus(r, "statement");
  return PgResult(r);
}

PgPool::PgPool(std::string conninfo, int max_size)
    : conninfo_(std::move(conninfo)), max_size_(max_size) {}

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
    if (!idle_.empty()) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return Lease(this, std::move(c));
    }
    ++open_;
  }
  auto c = PgConn::Connect(conninfo_);
  if (!c.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    --open_;
    cv_.notify_one();
    return c.status();
  }
  return Lease(this, std::move(c).value());
}

void PgPool::Release(std::unique_ptr<PgConn> c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (c->reusable()) {
    idle_.push_back(std::move(c));
  } else {
    --open_;  // dropped: the next Acquire reconnects
  }
  cv_.notify_one();
}

}  // namespace frugal::store
