// Team quotas: admins set them by team and pool name; the snapshot carries them by id.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

namespace pg {

PgStatement QuotasStatement() {
  return {"load_quotas",
          "SELECT team_id, capacity_kind, pool_id, max_gpus FROM team_quotas"
          " ORDER BY id",
          {}};
}

std::map<model::TeamId, model::TeamQuota> ParseQuotas(const PgResult& r) {
  std::map<model::TeamId, model::TeamQuota> out;
  for (int i = 0; i < r.rows(); ++i) {
    model::TeamQuota& q = out[r.Int(i, 0)];
    const int max = static_cast<int>(r.Int(i, 3));
    if (!r.IsNull(i, 1)) q.by_kind[model::ParseCapacityKind(r.Text(i, 1)).value()] = max;
    if (!r.IsNull(i, 2)) q.by_pool[r.Int(i, 2)] = max;
  }
  return out;
}

StatusOr<std::map<model::TeamId, model::TeamQuota>> LoadQuotas(PgConn& c) {
  ASSIGN_OR_RETURN(auto r, c.Exec(QuotasStatement()));
  return ParseQuotas(r);
}

}  // namespace pg

namespace {

StatusOr<std::string> TeamId(PgConn& c, const std::string& team) {
  ASSIGN_OR_RETURN(auto t, c.Exec("quota_team", "SELECT id FROM teams WHERE name = $1", {team}));
  if (t.rows() == 0) return NotFound("team '" + team + "' does not exist");
  return t.Text(0, 0);
}

StatusOr<QuotaSpec> ReadQuota(PgConn& c, const std::string& team_id) {
  ASSIGN_OR_RETURN(auto r, c.Exec("quota_of_team",
                                  "SELECT q.capacity_kind, p.name, q.max_gpus FROM team_quotas q"
                                  " LEFT JOIN pools p ON p.id = q.pool_id WHERE q.team_id = $1"
                                  " ORDER BY q.id",
                                  {team_id}));
  QuotaSpec q;
  for (int i = 0; i < r.rows(); ++i) {
    const int max = static_cast<int>(r.Int(i, 2));
    if (!r.IsNull(i, 0)) q.by_kind[model::ParseCapacityKind(r.Text(i, 0)).value()] = max;
    if (!r.IsNull(i, 1)) q.by_pool[r.Text(i, 1)] = max;
  }
  return q;
}

// The audit's (and apply's diff) view of a quota: the API's field names, nulls for "no limit".
nlohmann::json QuotaJson(const QuotaSpec& q) {
  nlohmann::json out = {{"pools", nlohmann::json::object()}};
  for (auto kind : {model::CapacityKind::kReserved, model::CapacityKind::kOnDemand,
                    model::CapacityKind::kSpot}) {
    auto it = q.by_kind.find(kind);
    out[std::string(model::ToString(kind)) + "_gpus"] =
        it == q.by_kind.end() ? nlohmann::json(nullptr) : nlohmann::json(it->second);
  }
  for (const auto& [pool, max] : q.by_pool) out["pools"][pool] = max;
  return out;
}

}  // namespace

namespace pg {

StatusOr<QuotaChange> SetQuotaTx(PgConn& c, const Principal& actor, const std::string& team,
                                 const QuotaSpec& quota) {
  ASSIGN_OR_RETURN(std::string id, TeamId(c, team));
  // Serialise concurrent setters of one team so `before` is what this change replaced.
  RETURN_IF_ERROR(c.Exec("quota_lock_team", "SELECT 1 FROM teams WHERE id = $1 FOR UPDATE", {id})
                      .status());
  ASSIGN_OR_RETURN(QuotaSpec old, ReadQuota(c, id));
  RETURN_IF_ERROR(
      c.Exec("quota_clear", "DELETE FROM team_quotas WHERE team_id = $1", {id}).status());
  for (const auto& [kind, max] : quota.by_kind) {
    RETURN_IF_ERROR(c.Exec("quota_kind",
                           "INSERT INTO team_quotas (team_id, capacity_kind, max_gpus)"
                           " VALUES ($1, $2, $3)",
                           {id, model::ToString(kind), std::to_string(max)})
                        .status());
  }
  for (const auto& [pool, max] : quota.by_pool) {
    ASSIGN_OR_RETURN(auto r, c.Exec("quota_pool",
                                    "INSERT INTO team_quotas (team_id, pool_id, max_gpus)"
                                    " SELECT $1, id, $3 FROM pools WHERE name = $2 RETURNING 1",
                                    {id, pool, std::to_string(max)}));
    if (r.rows() == 0) return FailedPrecondition("pool '" + pool + "' does not exist", "pools");
  }
  QuotaChange out;
  ASSIGN_OR_RETURN(out.saved, ReadQuota(c, id));
  const nlohmann::json before = QuotaJson(old), after = QuotaJson(out.saved);
  out.change.subject = "quota/" + team;
  out.change.before = before.dump();
  out.change.after = after.dump();
  if (before == after) return out;  // kUnchanged: nothing to audit
  out.change.kind = ConfigChange::Kind::kUpdated;
  RETURN_IF_ERROR(AppendAudit(c, actor, "quota.set", out.change.subject, before, after));
  return out;
}

}  // namespace pg

StatusOr<QuotaSpec> PgStore::SetQuota(const Principal& actor, const std::string& team,
                                      const QuotaSpec& quota) {
  return InTransaction<QuotaSpec>(pool_, [&](PgConn& c) -> StatusOr<QuotaSpec> {
    ASSIGN_OR_RETURN(auto changed, pg::SetQuotaTx(c, actor, team, quota));
    return changed.saved;
  });
}

StatusOr<QuotaSpec> PgStore::GetQuota(const std::string& team) {
  return InTransaction<QuotaSpec>(pool_, [&](PgConn& c) -> StatusOr<QuotaSpec> {
    ASSIGN_OR_RETURN(std::string id, TeamId(c, team));
    return ReadQuota(c, id);
  });
}

}  // namespace frugal::store
