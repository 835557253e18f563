// Nodes as administrators manage them (decision 0021): the listing, and drain, undrain and
// remove, each audited in its own transaction. The node row is locked first, as
// registration and ApplyPlan lock it, so a drain and an assignment are ordered: an
// assignment either committed before the drain (and runs on) or sees the drain.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

namespace {

constexpr const char* kNodeColumns =
    "SELECT n.id, n.name, p.name, n.gpus, n.gpu_type, n.gpu_mem_gb, n.state,"
    " n.lease_expires_at > now(), n.drained_by, " FRUGAL_US("n.drained_at") ", "
    FRUGAL_US("n.notice_at") ", n.lease_epoch, " FRUGAL_US("n.registered_at") ", "
    FRUGAL_US("n.last_heartbeat_at") ", " FRUGAL_US("n.lease_expires_at") ","
    " (SELECT count(*) FROM attempts a WHERE a.node_id = n.id AND a.ended_at IS NULL),"
    " n.gpu_stats::text, " FRUGAL_US("n.credential_issued_at") ", " FRUGAL_US("now()")
    " FROM nodes n JOIN pools p ON p.id = n.pool_id WHERE n.state <> 'gone'";

// The mean of the numeric "utilization" fields of a heartbeat's GPU readings (the worker
// sends what nvidia-smi said; anything else is ignored).
std::optional<double> MeanUtilization(const std::string& gpu_stats) {
  const json readings = json::parse(gpu_stats, nullptr, /*allow_exceptions=*/false);
  if (!readings.is_array()) return std::nullopt;
  double sum = 0;
  int n = 0;
  for (const auto& g : readings) {
    if (!g.is_object() || !g.contains("utilization") || !g["utilization"].is_number()) continue;
    sum += g["utilization"].get<double>();
    ++n;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

NodeInfo ParseNode(const PgResult& r, int i) {
  NodeInfo n;
  n.id = r.Int(i, 0);
  n.name = r.Text(i, 1);
  n.pool = r.Text(i, 2);
  n.gpus = static_cast<int>(r.Int(i, 3));
  n.gpu_type = r.Text(i, 4);
  n.gpu_mem_gb = static_cast<int>(r.Int(i, 5));
  const std::string state = r.Text(i, 6);
  const bool lease_ok = r.Bool(i, 7);
  if (!r.IsNull(i, 8)) n.drained_by = r.Text(i, 8);
  n.drained_at = pg::OptTime(r, i, 9);
  n.notice_at = pg::OptTime(r, i, 10);
  n.lease_epoch = r.Int(i, 11);
  n.registered_at = pg::FromMicros(r.Int(i, 12));
  n.last_heartbeat_at = pg::OptTime(r, i, 13);
  n.lease_expires_at = pg::FromMicros(r.Int(i, 14));
  n.running_attempts = static_cast<int>(r.Int(i, 15));
  n.gpu_utilization = MeanUtilization(r.Text(i, 16));
  n.credential_issued_at = pg::OptTime(r, i, 17);
  n.as_of = pg::FromMicros(r.Int(i, 18));
  if (n.drained_at) {
    n.drain = "admin";
  } else if (state == "draining") {
    n.drain = n.notice_at ? "notice" : "shutdown";
  }
  if (state == "lost" || !lease_ok) {
    n.state = "lost";
  } else if (!n.drain.empty()) {
    n.state = "draining";
  } else {
    n.state = "ready";
  }
  return n;
}

// The node `name`, its row locked for the rest of the transaction. NotFound if unknown
// or removed.
StatusOr<NodeInfo> LockNode(PgConn& c, const std::string& name) {
  ASSIGN_OR_RETURN(auto r, c.Exec("node_lock",
                                  std::string(kNodeColumns) + " AND n.name = $1 FOR UPDATE OF n",
                                  {name}));
  if (r.rows() == 0) return NotFound("node '" + name + "' not found");
  return ParseNode(r, 0);
}

// What the audit log keeps of a node.
json AuditJson(const NodeInfo& n) {
  return {{"name", n.name}, {"pool", n.pool}, {"state", n.state}, {"drain", n.drain},
          {"drained_by", n.drained_by ? json(*n.drained_by) : json(nullptr)},
          {"running_attempts", n.running_attempts}};
}

}  // namespace

StatusOr<std::vector<NodeInfo>> PgStore::ListNodes() {
  return InTransaction<std::vector<NodeInfo>>(
      pool_, [&](PgConn& c) -> StatusOr<std::vector<NodeInfo>> {
        ASSIGN_OR_RETURN(auto r, c.Exec("node_list", std::string(kNodeColumns) + " ORDER BY n.name"));
        std::vector<NodeInfo> out;
        for (int i = 0; i < r.rows(); ++i) out.push_back(ParseNode(r, i));
        return out;
      });
}

StatusOr<NodeInfo> PgStore::DrainNode(const Principal& actor, const std::string& name) {
  return InTransaction<NodeInfo>(pool_, [&](PgConn& c) -> StatusOr<NodeInfo> {
    ASSIGN_OR_RETURN(NodeInfo before, LockNode(c, name));
    if (before.drained_at) return before;  // unchanged: no audit row
    RETURN_IF_ERROR(c.Exec("node_drain",
                           "UPDATE nodes SET drained_at = now(), drained_by = $2 WHERE id = $1",
                           {std::to_string(before.id), actor.user})
                        .status());
    ASSIGN_OR_RETURN(NodeInfo after, LockNode(c, name));
    RETURN_IF_ERROR(pg::AppendAudit(c, actor, "node.drain", "node/" + name, AuditJson(before),
                                    AuditJson(after)));
    return after;
  });
}

StatusOr<NodeInfo> PgStore::UndrainNode(const Principal& actor, const std::string& name) {
  return InTransaction<NodeInfo>(pool_, [&](PgConn& c) -> StatusOr<NodeInfo> {
    ASSIGN_OR_RETURN(NodeInfo before, LockNode(c, name));
    if (!before.drained_at) return before;  // unchanged (a notice's drain is not ours to end)
    RETURN_IF_ERROR(c.Exec("node_undrain",
                           "UPDATE nodes SET drained_at = NULL, drained_by = NULL WHERE id = $1",
                           {std::to_string(before.id)})
                        .status());
    ASSIGN_OR_RETURN(NodeInfo after, LockNode(c, name));
    RETURN_IF_ERROR(pg::AppendAudit(c, actor, "node.undrain", "node/" + name, AuditJson(before),
                                    AuditJson(after)));
    return after;
  });
}

StatusOr<NodeInfo> PgStore::RemoveNode(const Principal& actor, const std::string& name) {
  return InTransaction<NodeInfo>(pool_, [&](PgConn& c) -> StatusOr<NodeInfo> {
    ASSIGN_OR_RETURN(NodeInfo before, LockNode(c, name));
    const bool lost = before.state == "lost";
    const std::string attempts = std::to_string(before.running_attempts) + " attempt(s)";
    if (!lost && !before.drained_at) {
      return Conflict("node '" + name + "' is " + before.state + " with a live lease and " +
                      attempts + ": drain it first (frugal admin node drain " + name +
                      "), then remove it once its attempts have ended");
    }
    if (!lost && before.running_attempts > 0) {
      return Conflict("node '" + name + "' is drained but still runs " + attempts +
                      ": remove it once they have ended, or once its lease is lost");
    }
    // A lost node's attempts end as the lost-node sweep would end them, jobs requeued.
    if (lost) RETURN_IF_ERROR(pg::EndAttemptsOfNode(c, before.id).status());
    RETURN_IF_ERROR(c.Exec("node_remove",
                           "UPDATE nodes SET state = 'gone', credential_sha256 = NULL,"
                           " lease_expires_at = least(lease_expires_at, now()) WHERE id = $1",
                           {std::to_string(before.id)})
                        .status());
    RETURN_IF_ERROR(
        pg::AppendAudit(c, actor, "node.remove", "node/" + name, AuditJson(before), nullptr));
    return before;
  });
}

}  // namespace frugal::store
