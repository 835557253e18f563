#include <cctype>
#include <set>
#include <string>

#include "scheduler/store/pg/migrations.h"

namespace frugal::store {

namespace {
// Key of the advisory lock that serialises migrations: two schedulers starting together
// must not both apply 0001.
constexpr const char* kLockKey = "4640228712035391";

StatusOr<int> MigrateLocked(PgConn& conn) {
  RETURN_IF_ERROR(conn.ExecScript(
                          "CREATE TABLE IF NOT EXISTS schema_migrations ("
                          " version integer PRIMARY KEY, name text NOT NULL,"
                          " applied_at timestamptz NOT NULL DEFAULT now())")
                      .status());
  ASSIGN_OR_RETURN(auto cur, conn.ExecScript("SELECT version FROM schema_migrations"));
  // Every version not yet applied runs, in order, not only those above the highest: a
  // migration numbered into a gap (work merged out of order) is never skipped.
  std::set<int> done;
  for (int i = 0; i < cur.rows(); ++i) done.insert(static_cast<int>(cur.Int(i, 0)));
  const int current = done.empty() ? 0 : *done.rbegin();
  const auto& all = AllMigrations();
  const int newest = all.empty() ? 0 : all.back().version;
  if (current > newest) {
    return FailedPrecondition("database schema is at version " + std::to_string(current) +
                              " but this binary knows only up to " + std::to_string(newest) +
                              "; run a newer frugal-scheduler");
  }
  int applied = 0;
  for (const auto& m : all) {
    if (done.count(m.version)) continue;
    RETURN_IF_ERROR(conn.ExecScript("BEGIN").status());
    auto run = conn.ExecScript(m.sql);
    if (!run.ok()) {
      (void)conn.ExecScript("ROLLBACK");
      return Internal(std::string("migration ") + m.name + " failed: " + run.status().message());
    }
    auto rec = conn.Exec("record_migration",
                         "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                         {std::to_string(m.version), std::string(m.name)});
    if (!rec.ok()) {
      (void)conn.ExecScript("ROLLBACK");
      return rec.status();
    }
    RETURN_IF_ERROR(conn.ExecScript("COMMIT").status());
    ++applied;
  }
  return applied;
}
}  // namespace

StatusOr<int> Migrate(PgConn& conn) {
  RETURN_IF_ERROR(conn.ExecScript(std::string("SELECT pg_advisory_lock(") + kLockKey + ")").status());
  auto result = MigrateLocked(conn);
  (void)conn.ExecScript(std::string("SELECT pg_advisory_unlock(") + kLockKey + ")");
  return result;
}

Status EnsureDatabase(const std::string& admin_conninfo, const std::string& dbname) {
  ASSIGN_OR_RETURN(auto conn, PgConn::Connect(admin_conninfo));
  ASSIGN_OR_RETURN(auto r, conn->Exec("db_exists", "SELECT 1 FROM pg_database WHERE datname = $1",
                                      {dbname}));
  if (r.rows() > 0) return Status::Ok();
  // Identifiers cannot be parameters; the name is checked to be a plain identifier.
  for (char c : dbname) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return InvalidArgument("database name must be [A-Za-z0-9_]+: " + dbname);
  }
  auto created = conn->ExecScript("CREATE DATABASE " + dbname);
  // A concurrent starter may have created it first (duplicate_database): that is fine.
  if (!created.ok() && created.status().message().find("already exists") == std::string::npos)
    return created.status();
  return Status::Ok();
}

}  // namespace frugal::store
