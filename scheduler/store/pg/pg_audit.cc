#include "scheduler/store/pg/pg_audit.h"

namespace frugal::store::pg {

Status AppendAudit(PgConn& c, const Principal& actor, std::string_view action,
                   std::string_view subject, const nlohmann::json& before,
                   const nlohmann::json& after) {
  auto json_param = [](const nlohmann::json& j) -> PgParam {
    if (j.is_null()) return std::nullopt;
    return j.dump();
  };
  // token_id 0 means "no token" (bootstrap, the system itself): stored as NULL so it can
  // never be mistaken for a real token.
  PgParam token = actor.token_id > 0 ? PgParam(std::to_string(actor.token_id)) : std::nullopt;
  return c.Exec("append_audit",
                "INSERT INTO audit_log (token_id, user_name, team_name, action, subject, before,"
                " after) VALUES ($1, $2, $3, $4, $5, $6::jsonb, $7::jsonb)",
                {token, actor.user, actor.team, std::string(action), std::string(subject),
                 json_param(before), json_param(after)})
      .status();
}

}  // namespace frugal::store::pg
