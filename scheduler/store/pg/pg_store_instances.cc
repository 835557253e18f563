// The exec provider's instances (decision 0029): one row per cloud instance, changed only by
// compare-and-set on its state, each change audited as the system's `exec-provider` actor.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

const char* ToString(InstanceState s) {
  switch (s) {
    case InstanceState::kCreating: return "creating";
    case InstanceState::kBooting: return "booting";
    case InstanceState::kRunning: return "running";
    case InstanceState::kDestroying: return "destroying";
    case InstanceState::kGone: return "gone";
  }
  return "gone";
}

namespace {

InstanceState ParseState(const std::string& s) {
  for (auto st : {InstanceState::kCreating, InstanceState::kBooting, InstanceState::kRunning,
                  InstanceState::kDestroying})
    if (s == ToString(st)) return st;
  return InstanceState::kGone;
}

constexpr const char* kColumns =
    "SELECT i.id, p.name, i.node_name, coalesce(i.instance_id, ''), i.state, i.leaked, i.gpus,"
    " i.rate_micros_per_gpu_hour, " FRUGAL_US("i.requested_at") ", " FRUGAL_US("i.created_at")
    ", " FRUGAL_US("i.registered_at") ", " FRUGAL_US("i.ended_at") ", i.reason, i.detail,"
    " CASE WHEN i.created_at IS NULL THEN 0 ELSE frugal_cost_micros(i.gpus,"
    " i.rate_micros_per_gpu_hour, i.created_at, i.created_at,"
    " greatest(i.created_at, coalesce(i.ended_at, now()))) END"
    " FROM instances i JOIN pools p ON p.id = i.pool_id";

Instance Parse(const PgResult& r, int i) {
  Instance x;
  x.id = r.Int(i, 0);
  x.pool = r.Text(i, 1);
  x.node = r.Text(i, 2);
  x.instance_id = r.Text(i, 3);
  x.state = ParseState(r.Text(i, 4));
  x.leaked = r.Bool(i, 5);
  x.gpus = static_cast<int>(r.Int(i, 6));
  x.rate_micros_per_gpu_hour = r.Int(i, 7);
  x.requested_at = pg::FromMicros(r.Int(i, 8));
  x.created_at = pg::OptTime(r, i, 9);
  x.registered_at = pg::OptTime(r, i, 10);
  x.ended_at = pg::OptTime(r, i, 11);
  x.reason = r.Text(i, 12);
  x.detail = r.Text(i, 13);
  x.cost_micros = r.Int(i, 14);
  return x;
}

json AuditJson(const Instance& x) {
  return {{"pool", x.pool},         {"node", x.node},     {"instance_id", x.instance_id},
          {"state", ToString(x.state)}, {"leaked", x.leaked}, {"gpus", x.gpus},
          {"reason", x.reason},     {"detail", x.detail}, {"cost_micros", x.cost_micros}};
}

Principal ProviderActor() {
  Principal p = SystemActor();
  p.user = "exec-provider";
  return p;
}

StatusOr<Instance> LockInstance(PgConn& c, std::int64_t id) {
  ASSIGN_OR_RETURN(auto r, c.Exec("instance_lock",
                                  std::string(kColumns) + " WHERE i.id = $1 FOR UPDATE OF i",
                                  {std::to_string(id)}));
  if (r.rows() == 0) return NotFound("instance " + std::to_string(id) + " not found");
  return Parse(r, 0);
}

// An audit action from a reason or state: lower case, [a-z0-9_], as the log requires.
std::string Action(const std::string& word) {
  std::string a = "instance.";
  for (char ch : word) a += (std::isalnum(static_cast<unsigned char>(ch)) ? std::tolower(ch) : '_');
  return a.substr(0, 64);
}

}  // namespace

StatusOr<std::vector<Instance>> PgStore::ListInstances(std::optional<Timestamp> ended_since) {
  return InTransaction<std::vector<Instance>>(
      pool_, [&](PgConn& c) -> StatusOr<std::vector<Instance>> {
        const std::string since = ended_since ? pg::ToTimeParam(*ended_since) : "infinity";
        ASSIGN_OR_RETURN(auto r, c.Exec("instance_list",
                                        std::string(kColumns) +
                                            " WHERE i.state <> 'gone' OR i.ended_at >= $1"
                                            " ORDER BY i.id",
                                        {since}));
        std::vector<Instance> out;
        for (int i = 0; i < r.rows(); ++i) out.push_back(Parse(r, i));
        return out;
      });
}

StatusOr<Instance> PgStore::AddInstance(const std::string& pool, const std::string& node,
                                        int gpus, const std::string& instance_id,
                                        const std::string& join_token_sha256) {
  return InTransaction<Instance>(pool_, [&](PgConn& c) -> StatusOr<Instance> {
    const bool leak = !instance_id.empty();
    std::string token_id;
    if (!leak && !join_token_sha256.empty()) {
      // The instance's own join token, as user exec-provider of team system.
      ASSIGN_OR_RETURN(auto t, c.Exec("instance_join_token",
                                      "WITH t AS (INSERT INTO teams (name) VALUES ('system')"
                                      " ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name"
                                      " RETURNING id), u AS (INSERT INTO users (team_id, name)"
                                      " SELECT id, 'exec-provider' FROM t ON CONFLICT (team_id,"
                                      " name) DO UPDATE SET name = EXCLUDED.name"
                                      " RETURNING id, team_id)"
                                      " INSERT INTO api_tokens (token_sha256, role, team_id,"
                                      " user_id) SELECT $1, 'worker', team_id, id FROM u"
                                      " RETURNING id",
                                      {join_token_sha256}));
      token_id = t.Text(0, 0);
    }
    auto r = c.Exec(
        "instance_add",
        "INSERT INTO instances (pool_id, node_name, instance_id, state, leaked, gpus,"
        " rate_micros_per_gpu_hour, created_at, reason, join_token_id)"
        " SELECT p.id, $2, nullif($3, ''), CASE WHEN $4 THEN 'destroying' ELSE 'creating' END,"
        " $4, $5, p.price_micros_per_gpu_hour, CASE WHEN $4 THEN now() END,"
        " CASE WHEN $4 THEN 'leak' ELSE '' END, nullif($6, '')::bigint"
        " FROM pools p WHERE p.name = $1 RETURNING id",
        {pool, node, instance_id, leak ? "true" : "false", std::to_string(gpus), token_id});
    if (!r.ok()) {
      if (r.status().code() == StatusCode::kConflict)
        return Conflict("an instance for node '" + node + "' already exists");
      return r.status();
    }
    if (r->rows() == 0) return NotFound("pool '" + pool + "' not found");
    ASSIGN_OR_RETURN(Instance added, LockInstance(c, r->Int(0, 0)));
    RETURN_IF_ERROR(pg::AppendAudit(c, ProviderActor(), leak ? "instance.leak" : "instance.create",
                                    "instance/" + node, nullptr, AuditJson(added)));
    return added;
  });
}

StatusOr<Instance> PgStore::ChangeInstance(std::int64_t id, const std::vector<InstanceState>& from,
                                           const InstanceChange& change) {
  return InTransaction<Instance>(pool_, [&](PgConn& c) -> StatusOr<Instance> {
    ASSIGN_OR_RETURN(Instance before, LockInstance(c, id));
    bool allowed = false;
    for (auto s : from) allowed = allowed || before.state == s;
    if (!allowed)
      return FailedPrecondition("instance " + before.node + " is " + ToString(before.state));
    const char* to = ToString(change.to);
    RETURN_IF_ERROR(
        c.Exec("instance_change",
               "UPDATE instances SET state = $2,"
               " instance_id = coalesce(nullif($3, ''), instance_id),"
               " created_at = CASE WHEN $2 = 'booting' THEN now() ELSE created_at END,"
               " registered_at = CASE WHEN $2 = 'running' THEN now() ELSE registered_at END,"
               " ended_at = CASE WHEN $2 = 'gone' THEN greatest(now(), requested_at) END,"
               " reason = CASE WHEN $4 = '' THEN reason ELSE $4 END,"
               " detail = CASE WHEN $5 = '' THEN detail ELSE left($5, 4096) END WHERE id = $1",
               {std::to_string(id), to, change.instance_id, change.reason, change.detail})
            .status());
    if (change.to == InstanceState::kGone) {
      // Its join token dies with it (registration revoked it already if it got that far).
      RETURN_IF_ERROR(c.Exec("instance_token_gone",
                             "UPDATE api_tokens SET revoked_at = now() WHERE revoked_at IS NULL"
                             " AND id = (SELECT join_token_id FROM instances WHERE id = $1)",
                             {std::to_string(id)})
                          .status());
      // Its node is gone with it, unless attempts still run there: the lost-node sweep
      // ends those (and requeues their jobs) once the lease runs out.
      RETURN_IF_ERROR(
          c.Exec("instance_node_gone",
                 "UPDATE nodes n SET state = 'gone', credential_sha256 = NULL,"
                 " lease_expires_at = least(n.lease_expires_at, now())"
                 " WHERE n.name = $1 AND n.state <> 'gone' AND NOT EXISTS (SELECT 1 FROM"
                 " attempts a WHERE a.node_id = n.id AND a.ended_at IS NULL)",
                 {before.node})
              .status());
    }
    ASSIGN_OR_RETURN(Instance after, LockInstance(c, id));
    const std::string action =
        change.to == InstanceState::kBooting   ? "created"
        : change.to == InstanceState::kRunning ? "registered"
        : change.to == InstanceState::kDestroying ? "destroy"
        : change.reason.empty()                   ? "gone"
        : (change.reason == "stockout" || change.reason == "create_failed")
            ? change.reason
            : "gone";
    RETURN_IF_ERROR(pg::AppendAudit(c, ProviderActor(), Action(action), "instance/" + before.node,
                                    AuditJson(before), AuditJson(after)));
    return after;
  });
}

}  // namespace frugal::store
