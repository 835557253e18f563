// Admin changes that are audited here: teams, pools, token listing and revocation, and the
// audit log's reader. Each change and its audit row share one transaction.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"
#include "scheduler/store/pool_json.h"

namespace frugal::store {

using nlohmann::json;

namespace {

TokenInfo ParseToken(const PgResult& r, int i) {
  TokenInfo t;
  t.id = r.Int(i, 0);
  t.role = ParseRole(r.Text(i, 1)).value();
  t.team = r.Text(i, 2);
  t.user = r.Text(i, 3);
  t.created_at = pg::FromMicros(r.Int(i, 4));
  t.revoked_at = pg::OptTime(r, i, 5);
  return t;
}

#define FRUGAL_TOKEN_COLUMNS                                                            \
  "k.id, k.role, t.name, u.name, " FRUGAL_US("k.created_at") ", " FRUGAL_US("k.revoked_at") \
  " FROM api_tokens k JOIN teams t ON t.id = k.team_id JOIN users u ON u.id = k.user_id"

json TokenJson(const TokenInfo& t) {
  return {{"id", t.id}, {"role", ToString(t.role)}, {"team", t.team}, {"user", t.user},
          {"revoked", t.revoked_at.has_value()}};
}

}  // namespace

namespace pg {

StatusOr<TeamChange> CreateTeamTx(PgConn& c, const Principal& actor, const std::string& name,
                                  bool exist_ok) {
  TeamChange out;
  out.change.subject = "team/" + name;
  out.change.before = "null";
  ASSIGN_OR_RETURN(auto r, c.Exec("create_team_if_new",
                                  "INSERT INTO teams (name) VALUES ($1) ON CONFLICT (name)"
                                  " DO NOTHING RETURNING id",
                                  {name}));
  const json after = {{"name", name}};
  out.change.after = after.dump();
  if (r.rows() == 0) {
    if (!exist_ok) return Conflict("team '" + name + "' already exists");
    ASSIGN_OR_RETURN(auto t, c.Exec("team_id_by_name", "SELECT id FROM teams WHERE name = $1",
                                    {name}));
    out.id = t.Int(0, 0);
    out.change.before = out.change.after;
    return out;  // kUnchanged
  }
  out.id = r.Int(0, 0);
  out.change.kind = ConfigChange::Kind::kCreated;
  RETURN_IF_ERROR(AppendAudit(c, actor, "team.create", out.change.subject, nullptr, after));
  return out;
}

StatusOr<PoolChange> UpsertPoolTx(PgConn& c, const Principal& actor, const model::Pool& p) {
  PoolChange out;
  out.change.subject = "pool/" + p.name;
  ASSIGN_OR_RETURN(auto old, c.Exec("pool_before",
                                    "SELECT id, capacity_kind, gpu_type, gpu_mem_gb, speed,"
                                    " price_micros_per_gpu_hour, max_gpus, startup_delay_s,"
                                    " idle_timeout_s, preemption_prior_per_node_hour, committed_gpus"
                                    " FROM pools WHERE name = $1 FOR UPDATE",
                                    {p.name}));
  json before = nullptr;
  if (old.rows() > 0) {
    model::Pool b;
    b.kind = model::ParseCapacityKind(old.Text(0, 1)).value();
    b.gpu_type = old.Text(0, 2);
    b.gpu_mem_gb = static_cast<int>(old.Int(0, 3));
    b.speed = old.Double(0, 4);
    b.price_per_gpu_hour = old.Int(0, 5);
    b.max_gpus = static_cast<int>(old.Int(0, 6));
    b.startup_delay = Seconds(old.Int(0, 7));
    b.idle_timeout = Seconds(old.Int(0, 8));
    b.preemption_prior_per_node_hour = old.Double(0, 9);
    b.committed_gpus = static_cast<int>(old.Int(0, 10));
    before = PoolSettingsJson(b);
  }
  const json after = PoolSettingsJson(p);
  out.pool = p;
  out.change.before = before.dump();
  out.change.after = after.dump();
  if (before == after) {
    out.pool.id = old.Int(0, 0);
    return out;  // kUnchanged
  }
  // Doubles go as %.17g so what is read back compares equal to what was written.
  auto dbl = [](double v) { return json(v).dump(); };
  ASSIGN_OR_RETURN(auto r, c.Exec("upsert_pool",
                                  "INSERT INTO pools (name, capacity_kind, gpu_type, gpu_mem_gb,"
                                  " speed, price_micros_per_gpu_hour, max_gpus, startup_delay_s,"
                                  " idle_timeout_s, preemption_prior_per_node_hour, committed_gpus)"
                                  " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)"
                                  " ON CONFLICT (name) DO"
                                  " UPDATE SET startup_delay_s = EXCLUDED.startup_delay_s,"
                                  " committed_gpus = EXCLUDED.committed_gpus,"
                                  " idle_timeout_s = EXCLUDED.idle_timeout_s,"
                                  " preemption_prior_per_node_hour ="
                                  " EXCLUDED.preemption_prior_per_node_hour,"
                                  " capacity_kind = EXCLUDED.capacity_kind, gpu_type ="
                                  " EXCLUDED.gpu_type, gpu_mem_gb = EXCLUDED.gpu_mem_gb, speed ="
                                  " EXCLUDED.speed, price_micros_per_gpu_hour ="
                                  " EXCLUDED.price_micros_per_gpu_hour, max_gpus ="
                                  " EXCLUDED.max_gpus RETURNING id",
                                  {p.name, model::ToString(p.kind), p.gpu_type,
                                   std::to_string(p.gpu_mem_gb), dbl(p.speed),
                                   std::to_string(p.price_per_gpu_hour),
                                   std::to_string(p.max_gpus),
                                   std::to_string(p.startup_delay.count()),
                                   std::to_string(p.idle_timeout.count()),
                                   dbl(p.preemption_prior_per_node_hour),
                                   std::to_string(p.committed_gpus)}));
  out.pool.id = r.Int(0, 0);
  const bool created = before.is_null();
  out.change.kind = created ? ConfigChange::Kind::kCreated : ConfigChange::Kind::kUpdated;
  RETURN_IF_ERROR(AppendAudit(c, actor, created ? "pool.create" : "pool.update",
                              out.change.subject, before, after));
  return out;
}

}  // namespace pg

StatusOr<Team> PgStore::CreateTeam(const Principal& actor, const std::string& name) {
  return InTransaction<Team>(pool_, [&](PgConn& c) -> StatusOr<Team> {
    ASSIGN_OR_RETURN(auto t, pg::CreateTeamTx(c, actor, name, /*exist_ok=*/false));
    return Team{t.id, name};
  });
}

StatusOr<model::Pool> PgStore::UpsertPool(const Principal& actor, const model::Pool& pool) {
  return InTransaction<model::Pool>(pool_, [&](PgConn& c) -> StatusOr<model::Pool> {
    ASSIGN_OR_RETURN(auto changed, pg::UpsertPoolTx(c, actor, pool));
    return changed.pool;
  });
}

StatusOr<std::vector<TokenInfo>> PgStore::ListTokens() {
  using Out = std::vector<TokenInfo>;
  return InTransaction<Out>(pool_, [&](PgConn& c) -> StatusOr<Out> {
    ASSIGN_OR_RETURN(auto r, c.Exec("list_tokens", "SELECT " FRUGAL_TOKEN_COLUMNS
                                                   " ORDER BY k.id DESC"));
    Out out;
    for (int i = 0; i < r.rows(); ++i) out.push_back(ParseToken(r, i));
    return out;
  });
}

StatusOr<TokenInfo> PgStore::RevokeToken(const Principal& actor, std::int64_t id) {
  return InTransaction<TokenInfo>(pool_, [&](PgConn& c) -> StatusOr<TokenInfo> {
    ASSIGN_OR_RETURN(auto r, c.Exec("token_for_revoke", "SELECT " FRUGAL_TOKEN_COLUMNS
                                    " WHERE k.id = $1 FOR UPDATE OF k",
                                    {std::to_string(id)}));
    if (r.rows() == 0) return NotFound("token " + std::to_string(id) + " does not exist");
    TokenInfo t = ParseToken(r, 0);
    if (t.revoked_at) return t;  // already revoked: nothing changes, nothing to audit
    const json before = TokenJson(t);
    ASSIGN_OR_RETURN(auto u, c.Exec("revoke_token",
                                    "UPDATE api_tokens SET revoked_at = now() WHERE id = $1"
                                    " RETURNING " FRUGAL_US("revoked_at"),
                                    {std::to_string(id)}));
    t.revoked_at = pg::FromMicros(u.Int(0, 0));
    RETURN_IF_ERROR(pg::AppendAudit(c, actor, "token.revoke", "token/" + std::to_string(id),
                                    before, TokenJson(t)));
    return t;
  });
}

StatusOr<std::vector<AuditEntry>> PgStore::ListAudit(const AuditFilter& f) {
  using Out = std::vector<AuditEntry>;
  return InTransaction<Out>(pool_, [&](PgConn& c) -> StatusOr<Out> {
    ASSIGN_OR_RETURN(
        auto r, c.Exec("list_audit",
                       "SELECT id, " FRUGAL_US("at") ", token_id, user_name, team_name, action,"
                       " subject, coalesce(before::text, 'null'), coalesce(after::text, 'null')"
                       " FROM audit_log WHERE ($1::timestamptz IS NULL OR at >= $1)"
                       " AND ($2::text IS NULL OR action = $2) ORDER BY id DESC LIMIT $3",
                       {f.since ? PgParam(pg::ToTimeParam(*f.since)) : std::nullopt, f.action,
                        std::to_string(f.limit)}));
    Out out;
    for (int i = 0; i < r.rows(); ++i) {
      AuditEntry e;
      e.id = r.Int(i, 0);
      e.at = pg::FromMicros(r.Int(i, 1));
      e.token_id = r.OptInt(i, 2);
      e.user = r.Text(i, 3);
      e.team = r.Text(i, 4);
      e.action = r.Text(i, 5);
      e.subject = r.Text(i, 6);
      e.before = r.Text(i, 7);
      e.after = r.Text(i, 8);
      out.push_back(std::move(e));
    }
    return out;
  });
}

}  // namespace frugal::store
