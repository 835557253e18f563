#include "scheduler/app/embedded_db.h"

#include <spdlog/spdlog.h>

#include "common/log.h"
#include "scheduler/store/pg/migrations.h"

namespace frugal {

StatusOr<Database> OpenDatabase(const config::SchedulerConfig& config) {
  Database db;
  if (!config.database_url.empty()) {
    db.conninfo = config.database_url;
  } else {
    db.cluster = std::make_unique<store::PgServer>(
        store::PgServerOptions{config.state_dir + "/pg", 5432, false});
    RETURN_IF_ERROR(db.cluster->Start());
    RETURN_IF_ERROR(store::EnsureDatabase(db.cluster->ConnString("postgres"), "frugal"));
    db.conninfo = db.cluster->ConnString("frugal");
    spdlog::info(R"("event":"embedded_postgres","socket_dir":"{}")",
                 JsonEscape(db.cluster->socket_dir()));
  }
  // No statement or lock timeout here (PgConnOptions{}): a migration may wait for another
  // scheduler's migration (an advisory lock) or rewrite a large table.
  ASSIGN_OR_RETURN(auto conn, store::PgConn::Connect(db.conninfo, store::PgConnOptions{}));
  ASSIGN_OR_RETURN(int applied, store::Migrate(*conn));
  if (applied > 0) spdlog::info(R"("event":"migrated","applied":{})", applied);
  return db;
}

}  // namespace frugal
