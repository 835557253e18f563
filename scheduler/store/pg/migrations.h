// Schema migrations: migrations/NNNN_verb_noun.sql, compiled into the binary, applied in
// order at start-up, each in its own transaction, recorded in schema_migrations, and
// serialised across processes by an advisory lock.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/store/pg/pg_conn.h"

namespace frugal::store {

struct Migration {
  int version;
  const char* name;
  const char* sql;
};

// Every migration this binary knows, by ascending version.
const std::vector<Migration>& AllMigrations();

// Brings the database to the newest known version. FailedPrecondition if the database
// was migrated by a newer binary. Returns the number of migrations applied.
StatusOr<int> Migrate(PgConn& conn);

// Creates database `dbname` through `admin_conninfo` unless it exists.
Status EnsureDatabase(const std::string& admin_conninfo, const std::string& dbname);

}  // namespace frugal::store
