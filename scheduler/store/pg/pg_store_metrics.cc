// The database's figures for GET /metrics. Four grouped scans in one read-only snapshot;
// every count is of rows that are never deleted, so the counters only grow.
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

namespace {

// Jobs by team, state and priority class: the queue, submissions and endings in one scan.
constexpr const char* kJobCounts =
    "SELECT t.name, j.state, j.priority, count(*) FROM jobs j JOIN teams t ON t.id = j.team_id"
    " GROUP BY 1, 2, 3 ORDER BY 1, 2, 3";

// Attempts by the pool they were billed to (an ended attempt's usage entry keeps its pool
// even if its node later re-registers elsewhere), end reason, stop kind (idle stops
// included) and, for the idle guardrail's stop orders, their stop reason.
constexpr const char* kAttemptCounts =
    "SELECT p.name, a.end_reason, " FRUGAL_STOP_KIND("a") ","
    " CASE WHEN a.idle_stopped_at IS NOT NULL THEN a.stop_reason END, count(*) FROM attempts a"
    " JOIN nodes n ON n.id = a.node_id"
    " LEFT JOIN ledger_entries l ON l.attempt_id = a.id AND l.kind = 'usage'"
    " JOIN pools p ON p.id = coalesce(l.pool_id, n.pool_id)"
    " GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4";

constexpr const char* kPoolUse =
    "SELECT p.name, p.capacity_kind, p.max_gpus,"
    " coalesce((SELECT sum(n.gpus) FROM nodes n WHERE n.pool_id = p.id"
    "   AND n.state IN ('live', 'draining')), 0),"
    " coalesce((SELECT sum(a.gpus) FROM attempts a JOIN nodes n ON n.id = a.node_id"
    "   WHERE n.pool_id = p.id AND a.ended_at IS NULL), 0),"
    // An admin-drained node (decision 0021) counts as draining, as the node list shows it.
    " (SELECT count(*) FROM nodes n WHERE n.pool_id = p.id AND n.state = 'live'"
    "   AND n.drained_at IS NULL),"
    " (SELECT count(*) FROM nodes n WHERE n.pool_id = p.id AND (n.state = 'draining'"
    "   OR (n.state = 'live' AND n.drained_at IS NOT NULL))),"
    " " FRUGAL_PAID_GPUS("p") ","
    // Idle: live, not drained, running nothing (paid for and unused on a billed pool).
    " (SELECT count(*) FROM nodes n WHERE n.pool_id = p.id AND n.state = 'live'"
    "   AND n.drained_at IS NULL AND NOT EXISTS (SELECT 1 FROM attempts a"
    "   WHERE a.node_id = n.id AND a.ended_at IS NULL))"
    " FROM pools p ORDER BY p.name";

// The ledger plus unbilled attempts up to now, priced by the same F as the cost report;
// the rate is what running attempts cost per hour at their pool's price.
constexpr const char* kSpend =
    "WITH iv AS (SELECT l.team_id, l.pool_id, l.kind, l.amount_micros AS amount,"
    "   0::bigint AS rate FROM ledger_entries l"
    "   UNION ALL"
    "   SELECT j.team_id, n.pool_id, 'usage', frugal_cost_micros(a.gpus,"
    "   p.price_micros_per_gpu_hour, a.started_at, a.started_at,"
    "   greatest(a.started_at, coalesce(a.ended_at, now()))),"
    "   CASE WHEN a.ended_at IS NULL THEN a.gpus * p.price_micros_per_gpu_hour ELSE 0 END"
    "   FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN nodes n ON n.id = a.node_id"
    "   JOIN pools p ON p.id = n.pool_id WHERE a.ended_at IS NULL OR NOT a.billed)"
    " SELECT t.name, p.name,"
    "   coalesce(sum(amount) FILTER (WHERE kind = 'usage'), 0)::bigint,"
    "   coalesce(sum(amount) FILTER (WHERE kind = 'lost_work'), 0)::bigint,"
    "   coalesce(sum(rate), 0)::bigint"
    " FROM iv JOIN teams t ON t.id = iv.team_id JOIN pools p ON p.id = iv.pool_id"
    " GROUP BY 1, 2 ORDER BY 1, 2";

bool Ended(const std::string& state) {
  return state != "pending" && state != "held" && state != "running";
}

void AddJobCounts(const PgResult& r, StoreMetrics& m) {
  for (int i = 0; i < r.rows(); ++i) {
    const std::string team = r.Text(i, 0), state = r.Text(i, 1);
    const std::int64_t n = r.Int(i, 3);
    if (m.submitted.empty() || m.submitted.back().team != team) m.submitted.push_back({team, "", 0});
    m.submitted.back().jobs += n;
    if (!Ended(state)) {
      m.queue.push_back({state, team, r.Text(i, 2), n});
    } else if (!m.finished.empty() && m.finished.back().team == team &&
               m.finished.back().state == state) {
      m.finished.back().jobs += n;  // rows are ordered by team, state, then priority
    } else {
      m.finished.push_back({team, state, n});
    }
  }
}

void Add(std::vector<StoreMetrics::AttemptCount>& v, const std::string& pool,
         const std::string& reason, std::int64_t n) {
  for (auto& c : v) {
    if (c.pool == pool && c.reason == reason) {
      c.attempts += n;
      return;
    }
  }
  v.push_back({pool, reason, n});
}

void AddAttemptCounts(const PgResult& r, StoreMetrics& m) {
  for (int i = 0; i < r.rows(); ++i) {
    const std::string pool = r.Text(i, 0);
    const std::int64_t n = r.Int(i, 4);
    Add(m.started, pool, "", n);
    // Idle stop orders count when given, whether or not the attempt has ended yet.
    if (!r.IsNull(i, 3))
      Add(m.idle_stops, pool, r.Text(i, 3) == "preempted" ? "requeue" : "stop", n);
    if (r.IsNull(i, 1)) continue;
    const std::string reason = r.Text(i, 1);
    Add(m.ended, pool, reason, n);
    if (reason != "preempted") continue;
    const std::string kind = r.IsNull(i, 2) ? "" : r.Text(i, 2);
    Add(m.preempted, pool,
        kind == "priority_preemption" ? "priority" : kind.empty() ? "node" : kind, n);
  }
}

}  // namespace

StatusOr<StoreMetrics> PgStore::LoadMetrics() {
  return InTransaction<StoreMetrics>(pool_, [&](PgConn& c) -> StatusOr<StoreMetrics> {
    RETURN_IF_ERROR(
        c.ExecScript("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").status());
    StoreMetrics m;
    ASSIGN_OR_RETURN(auto jobs, c.Exec("metrics_jobs", kJobCounts));
    AddJobCounts(jobs, m);
    ASSIGN_OR_RETURN(auto attempts, c.Exec("metrics_attempts", kAttemptCounts));
    AddAttemptCounts(attempts, m);
    ASSIGN_OR_RETURN(auto pools, c.Exec("metrics_pools", kPoolUse));
    for (int i = 0; i < pools.rows(); ++i) {
      m.pools.push_back({pools.Text(i, 0), pools.Text(i, 1), pools.Int(i, 2), pools.Int(i, 3),
                         pools.Int(i, 4), pools.Int(i, 5), pools.Int(i, 6), pools.Int(i, 7),
                         pools.Int(i, 8)});
    }
    ASSIGN_OR_RETURN(auto spend, c.Exec("metrics_spend", kSpend));
    for (int i = 0; i < spend.rows(); ++i) {
      m.spend.push_back({spend.Text(i, 0), spend.Text(i, 1), spend.Int(i, 2), spend.Int(i, 3),
                         spend.Int(i, 4)});
    }
    return m;
  });
}

}  // namespace frugal::store
