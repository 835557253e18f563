// The audit log's one writer: every admin change appends its row through AppendAudit, on
// the connection (and so in the transaction) that makes the change. The table refuses
// UPDATE, DELETE and TRUNCATE (migrations/0011_add_audit_log.sql).
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/pg/pg_conn.h"

namespace frugal::store::pg {

// Appends (actor, database now(), action, subject, before, after). A null `before` or
// `after` is stored as SQL NULL (the subject did not exist / no longer exists). Call inside
// the transaction of the change, after the change succeeded.
Status AppendAudit(PgConn& c, const Principal& actor, std::string_view action,
                   std::string_view subject, const nlohmann::json& before,
                   const nlohmann::json& after);

}  // namespace frugal::store::pg
