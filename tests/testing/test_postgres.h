// One throwaway PostgreSQL cluster per test binary (initdb in a temp dir, Unix socket
// only, no fsync), started on first use and stopped at exit. Each test takes its own
// database, cloned from a migrated template, so tests never see each other's rows.
#pragma once

#include <memory>
#include <string>

#include "scheduler/store/pg/pg_server.h"
#include "tests/testing/temp_dir.h"

namespace frugal::testing {

class TestPostgres {
 public:
  // The binary's cluster; aborts the test binary with a message if it cannot start.
  static TestPostgres& Get();

  // A new, migrated database; returns its libpq connection string.
  std::string NewDatabase();
  // A new empty database (for migration tests).
  std::string NewEmptyDatabase();

  store::PgServer& cluster() { return *cluster_; }
  ~TestPostgres();

 private:
  TestPostgres();
  std::string CreateDatabase(const std::string& template_name);

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<store::PgServer> cluster_;
  int next_ = 0;
};

}  // namespace frugal::testing
