// Opens the scheduler's database: the configured database_url, or else the embedded
// PostgreSQL cluster under the state directory (started if not already running, stopped
// on destruction if this process started it). Migrates the schema either way.
#pragma once

#include <memory>
#include <string>

#include "config/config.h"
#include "scheduler/store/pg/pg_server.h"

namespace frugal {

struct Database {
  std::string conninfo;
  std::unique_ptr<store::PgServer> cluster;  // null with an external database_url
};

StatusOr<Database> OpenDatabase(const config::SchedulerConfig& config);

}  // namespace frugal
