// The scheduling cycle's I/O: load a consistent snapshot, apply a plan in one transaction.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_store.h"

namespace frugal::store {

using nlohmann::json;

StatusOr<model::Snapshot> PgStore::LoadSnapshot(int max_pending) {
  return InTransaction<model::Snapshot>(pool_, [&](PgConn& c) -> StatusOr<model::Snapshot> {
    // One consistent view for the whole snapshot.
    RETURN_IF_ERROR(c.ExecScript("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").status());
    model::Snapshot s;
    ASSIGN_OR_RETURN(auto now, c.Exec("snapshot_now", "SELECT " FRUGAL_US("now()")));
    s.now = pg::FromMicros(now.Int(0, 0));
    ASSIGN_OR_RETURN(
        auto p,
        c.Exec("snapshot_pending",
               "SELECT j.id, j.team_id, j.gpus, to_json(j.gpu_types)::text, j.min_gpu_mem_gb,"
               " j.priority_rank, j.tolerance, " FRUGAL_US("j.deadline") ", "
               FRUGAL_US("j.created_at") ", j.reason,"
               " (SELECT coalesce(json_agg(d.id ORDER BY d.id), '[]')::text FROM jobs d"
               "   WHERE d.id = ANY (j.depends_on) AND d.state IN ('pending', 'held', 'running')),"
               " (SELECT min(d.id) FROM jobs d WHERE d.id = ANY (j.depends_on)"
               "   AND d.state IN ('failed', 'cancelled', 'timed_out'))"
               " FROM jobs j WHERE j.state = 'pending'"
               " AND (j.not_before IS NULL OR j.not_before <= now())"
               " ORDER BY j.priority_rank, j.id LIMIT $1",
               {std::to_string(max_pending)}));
    for (int i = 0; i < p.rows(); ++i) {
      model::PendingJob j;
      j.id = p.Int(i, 0);
      j.team_id = p.Int(i, 1);
      j.gpus = static_cast<int>(p.Int(i, 2));
      j.gpu_types = json::parse(p.Text(i, 3)).get<std::vector<std::string>>();
      if (auto v = p.OptInt(i, 4)) j.min_gpu_mem_gb = static_cast<int>(*v);
      j.priority_rank = static_cast<int>(p.Int(i, 5));
      j.tolerance = model::ParseTolerance(p.Text(i, 6)).value();
      j.deadline = pg::OptTime(p, i, 7);
      j.created_at = pg::FromMicros(p.Int(i, 8));
      j.reason = p.Text(i, 9);
      j.waiting_for = json::parse(p.Text(i, 10)).get<std::vector<model::JobId>>();
      j.failed_dependency = p.OptInt(i, 11);
      s.pending.push_back(std::move(j));
    }
    ASSIGN_OR_RETURN(auto r, c.Exec("snapshot_running",
                                    "SELECT a.id, a.job_id, a.node_id, a.gpus, j.priority_rank"
                                    " FROM attempts a JOIN jobs j ON j.id = a.job_id"
                                    " WHERE a.ended_at IS NULL ORDER BY a.id"));
    for (int i = 0; i < r.rows(); ++i) {
      s.running.push_back({r.Int(i, 0), r.Int(i, 1), r.Int(i, 2), static_cast<int>(r.Int(i, 3)),
                           static_cast<int>(r.Int(i, 4))});
    }
    ASSIGN_OR_RETURN(auto n, c.Exec("snapshot_nodes",
                                    "SELECT id, name, pool_id, gpus, gpu_type, gpu_mem_gb, "
                                    FRUGAL_US("lease_expires_at") " FROM nodes"
                                    " WHERE state = 'live' AND lease_expires_at > now() ORDER BY id"));
    for (int i = 0; i < n.rows(); ++i) {
      model::Node node;
      node.id = n.Int(i, 0);
      node.name = n.Text(i, 1);
      node.pool_id = n.Int(i, 2);
      node.gpus = static_cast<int>(n.Int(i, 3));
      node.gpu_type = n.Text(i, 4);
      node.gpu_mem_gb = static_cast<int>(n.Int(i, 5));
      node.lease_expires_at = pg::FromMicros(n.Int(i, 6));
      s.nodes.push_back(std::move(node));
    }
    ASSIGN_OR_RETURN(s.pools, pg::LoadPools(c));
    return s;
  });
}

namespace pg {

StatusOr<std::vector<model::Pool>> LoadPools(PgConn& c) {
  ASSIGN_OR_RETURN(auto pl, c.Exec("load_pools",
                                   "SELECT id, name, capacity_kind, gpu_type, gpu_mem_gb, speed,"
                                   " price_micros_per_gpu_hour, max_gpus FROM pools ORDER BY id"));
  std::vector<model::Pool> out;
  for (int i = 0; i < pl.rows(); ++i) {
    model::Pool pool;
    pool.id = pl.Int(i, 0);
    pool.name = pl.Text(i, 1);
    pool.kind = model::ParseCapacityKind(pl.Text(i, 2)).value();
    pool.gpu_type = pl.Text(i, 3);
    pool.gpu_mem_gb = static_cast<int>(pl.Int(i, 4));
    pool.speed = pl.Double(i, 5);
    pool.price_per_gpu_hour = pl.Int(i, 6);
    pool.max_gpus = static_cast<int>(pl.Int(i, 7));
    out.push_back(std::move(pool));
  }
  return out;
}

}  // namespace pg

StatusOr<std::vector<model::Pool>> PgStore::ListPools() {
  return InTransaction<std::vector<model::Pool>>(pool_, [](PgConn& c) { return pg::LoadPools(c); });
}

namespace {

// PostgreSQL array literal of integers, e.g. {1,2,3}.
template <typename T, typename F>
std::string IntArray(const std::vector<T>& items, F get) {
  std::string s = "{";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(get(items[i]));
  }
  return s + "}";
}

// Reasons travel as a JSON array (no array-literal quoting rules to get wrong).
template <typename T>
std::string Reasons(const std::vector<T>& items) {
  json a = json::array();
  for (const auto& it : items) a.push_back(it.reason);
  return a.dump();
}

}  // namespace

StatusOr<int> PgStore::ApplyPlan(const model::Plan& plan) {
  return InTransaction<int>(pool_, [&](PgConn& c) -> StatusOr<int> {
    int started = 0;
    if (!plan.assignments.empty()) {
      const auto& as = plan.assignments;
      // Batched: one statement starts every assignment whose job is still pending.
      ASSIGN_OR_RETURN(
          auto r,
          c.Exec("apply_assignments",
                 "WITH a AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[],"
                 "   ARRAY(SELECT jsonb_array_elements_text($4::jsonb)))"
                 "   AS t(job_id, node_id, gpus, reason)),"
                 " upd AS (UPDATE jobs j SET state = 'running', attempt_count = j.attempt_count + 1,"
                 "   started_at = coalesce(j.started_at, now()), updated_at = now(),"
                 "   reason = a.reason FROM a WHERE j.id = a.job_id AND j.state = 'pending'"
                 "   RETURNING j.id, j.attempt_count, a.node_id, a.gpus, a.reason),"
                 " ins AS (INSERT INTO attempts (job_id, number, node_id, gpus, lease_epoch)"
                 "   SELECT upd.id, upd.attempt_count, upd.node_id, upd.gpus, n.lease_epoch"
                 "   FROM upd JOIN nodes n ON n.id = upd.node_id RETURNING job_id),"
                 " ev AS (INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
                 "   SELECT id, 'state_changed', 'pending', 'running', reason FROM upd)"
                 " SELECT count(*) FROM ins",
                 {IntArray(as, [](auto& a) { return a.job_id; }),
                  IntArray(as, [](auto& a) { return a.node_id; }),
                  IntArray(as, [](auto& a) { return a.gpus; }), Reasons(as)}));
      started = static_cast<int>(r.Int(0, 0));
    }
    if (!plan.waits.empty()) {
      RETURN_IF_ERROR(
          c.Exec("apply_waits",
                 "UPDATE jobs j SET reason = w.reason FROM unnest($1::bigint[],"
                 " ARRAY(SELECT jsonb_array_elements_text($2::jsonb))) AS w(job_id, reason)"
                 " WHERE j.id = w.job_id AND j.state = 'pending' AND j.reason <> w.reason",
                 {IntArray(plan.waits, [](auto& w) { return w.job_id; }), Reasons(plan.waits)})
              .status());
    }
    if (!plan.cancels.empty()) {
      RETURN_IF_ERROR(
          c.Exec("apply_cancels",
                 "WITH w AS (SELECT * FROM unnest($1::bigint[],"
                 "   ARRAY(SELECT jsonb_array_elements_text($2::jsonb))) AS t(job_id, reason)),"
                 " upd AS (UPDATE jobs j SET state = 'cancelled', reason = w.reason,"
                 "   finished_at = now(), updated_at = now() FROM w"
                 "   WHERE j.id = w.job_id AND j.state = 'pending' RETURNING j.id, w.reason)"
                 " INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
                 " SELECT id, 'state_changed', 'pending', 'cancelled', reason FROM upd",
                 {IntArray(plan.cancels, [](auto& w) { return w.job_id; }),
                  Reasons(plan.cancels)})
              .status());
    }
    return started;
  });
}

}  // namespace frugal::store
