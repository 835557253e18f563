// The cost ledger: billing ended attempts, and cost reports over the ledger plus the running
// attempts. All arithmetic is the SQL function frugal_cost_micros (migration 0004).
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

namespace pg {

namespace {

// Kept as written: clang-format splits these strings a word per line at each macro.
// clang-format off
// The cheapest on-demand rate for the attempt's GPU type, or its own rate when there is
// none: what a spot attempt saved (p is the attempt's pool).
#define FRUGAL_ON_DEMAND_RATE                                                           \
  "coalesce((SELECT min(o.price_micros_per_gpu_hour) FROM pools o WHERE"                \
  " o.capacity_kind = 'on_demand' AND o.gpu_type = p.gpu_type),"                        \
  " p.price_micros_per_gpu_hour) AS od_rate"
// A single-node attempt's last checkpoint, found through the (job, step) key: checkpoints
// has no index by attempt, and without the job the read scans the whole table.
#define FRUGAL_LAST_CHECKPOINT \
  "(SELECT max(k.created_at) FROM checkpoints k WHERE k.job_id = a.job_id AND k.attempt_id = a.id)"

// From `todo` (one row per attempt to bill, in kBill's columns): a usage entry for each
// attempt that ran, and a lost-work entry for each whose work the capacity took. An attempt
// no worker ever acknowledged never ran: it costs nothing and loses nothing (it is marked
// billed all the same, so it is settled once).
constexpr const char* kBillEntries =
    " entries AS (SELECT 'usage' AS kind, todo.*, started_at AS s FROM todo WHERE ran"
    "   UNION ALL SELECT 'lost_work', todo.*, lost_from FROM todo"
    "   WHERE ran AND lost AND lost_from < ended_at),"
    " ins AS (INSERT INTO ledger_entries (kind, attempt_id, job_id, team_id, pool_id,"
    "   capacity_kind, gpus, origin_at, started_at, ended_at, rate_micros_per_gpu_hour,"
    "   on_demand_rate_micros_per_gpu_hour, amount_micros)"
    "   SELECT kind, id, job_id, team_id, pool_id, capacity_kind, gpus, started_at, s,"
    "   ended_at, rate, od_rate, frugal_cost_micros(gpus, rate, started_at, s, ended_at)"
    "   FROM entries RETURNING 1)"
    " SELECT count(*) FROM todo";

// Bills the ended, unbilled attempts that {WHICH} selects.
const std::string kBill = std::string(
    "WITH todo AS (SELECT a.id, a.job_id, a.team_id, n.pool_id, p.capacity_kind, a.gpus,"
    "   a.started_at, a.ended_at, a.end_reason, p.price_micros_per_gpu_hour AS rate, "
    FRUGAL_ON_DEMAND_RATE ","
    // Lost work runs from the last checkpoint this attempt committed (or its start);
    // a gang part's from the gang's last one.
    "   least(a.ended_at, greatest(a.started_at, coalesce(CASE WHEN a.gang_size = 1 THEN "
    FRUGAL_LAST_CHECKPOINT
    "     ELSE gang.checkpoint_at END, a.started_at))) AS lost_from,"
    "   CASE WHEN a.gang_size = 1 THEN a.end_reason IN ('preempted', 'node_lost')"
    "     ELSE coalesce(gang.lost, false) END AS lost,"
    "   a.acked_at IS NOT NULL AS ran"
    "   FROM attempts a JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
    // A gang's parts, read once (decision 0032): its last checkpoint (rank 0's, which
    // holds every rank's state), whether the capacity broke it (model::GangEnd: a node
    // lost, or a part stopped for its own node's reason; a part stopped because a peer
    // failed loses nothing, the failure being the job's own) and whether a part still
    // runs. A single-node attempt skips it.
    "   LEFT JOIN LATERAL (SELECT max(k.created_at) AS checkpoint_at,"
    "     bool_or(g.end_reason = 'node_lost' OR (g.end_reason = 'preempted' AND"
    "     (g.noticed_at IS NOT NULL OR g.stop_reason IS NOT NULL))) AS lost,"
    "     bool_or(g.ended_at IS NULL) AS live"
    "     FROM attempts g LEFT JOIN checkpoints k ON k.job_id = g.job_id"
    "     AND k.attempt_id = g.id"
    "     WHERE a.gang_size > 1 AND g.job_id = a.job_id AND g.number = a.number) gang ON true"
    "   WHERE {WHICH} AND a.ended_at IS NOT NULL AND NOT a.billed"
    // A gang's parts are billed once its last part has ended: only then is its end
    // known. Until then reports count an ended part as running attempts are.
    "   AND (a.gang_size = 1 OR NOT gang.live)"
    "   FOR UPDATE OF a),"
    " marked AS (UPDATE attempts SET billed = true WHERE id = ANY (ARRAY(SELECT id FROM todo))),") +
    kBillEntries;
// clang-format on

}  // namespace

PgStatement BillStatement(const std::vector<model::AttemptId>& attempts) {
  std::string ids = "{";
  for (std::size_t i = 0; i < attempts.size(); ++i) {
    ids += (i ? "," : "") + std::to_string(attempts[i]);
  }
  ids += "}";
  // Each attempt and its gang's other parts, found through the primary key and the
  // (job, number) key whatever the statistics say.
  static const std::string sql = [] {
    std::string bill = kBill;
    bill.replace(bill.find("{WHICH}"), 7,
                 "a.id IN (SELECT g.id FROM attempts x JOIN attempts g ON g.job_id = x.job_id"
                 " AND g.number = x.number WHERE x.id = ANY ($1::bigint[]))");
    return bill;
  }();
  return {"bill_attempts", sql, {ids}};
}

StatusOr<int> BillAttempts(PgConn& c, const std::vector<model::AttemptId>& attempts) {
  if (attempts.empty()) return 0;
  ASSIGN_OR_RETURN(auto r, c.Exec(BillStatement(attempts)));
  return static_cast<int>(r.Int(0, 0));
}

std::string EndAndBillSql(const std::string& update) {
  // Kept as written: clang-format splits these strings a word per line at each macro.
  // clang-format off
  return "WITH ended AS (" + update +
         " RETURNING a.*),"
         " todo AS (SELECT a.id, a.job_id, a.team_id, n.pool_id, p.capacity_kind, a.gpus,"
         " a.started_at, a.ended_at, a.end_reason, p.price_micros_per_gpu_hour AS rate, "
         FRUGAL_ON_DEMAND_RATE
         ", least(a.ended_at, greatest(a.started_at, coalesce(" FRUGAL_LAST_CHECKPOINT
         ", a.started_at))) AS lost_from, a.end_reason IN ('preempted', 'node_lost') AS lost,"
         " a.acked_at IS NOT NULL AS ran"
         " FROM ended a JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
         "),"
         + std::string(kBillEntries);
  // clang-format on
}

#undef FRUGAL_ON_DEMAND_RATE
#undef FRUGAL_LAST_CHECKPOINT

}  // namespace pg

namespace {

const char* KeyExpression(CostDimension d) {
  switch (d) {
    case CostDimension::kTeam: return "t.name";
    case CostDimension::kProject: return "j.project";
    case CostDimension::kUser: return "u.name";
    case CostDimension::kPool: return "p.name";
    case CostDimension::kJob: return "j.id::text";
  }
  return "t.name";
}

// Ledger entries and running attempts clipped to [t0, t1], priced by the same F. $1 = t0,
// $2 = t1 (timestamptz), $3 = team filter (bigint or NULL). {KEY} is the grouping column.
constexpr const char* kCostRows =
    "WITH w AS (SELECT $1::timestamptz AS t0, $2::timestamptz AS t1),"
    " iv AS (SELECT l.kind, l.job_id, l.team_id, l.pool_id, l.capacity_kind, l.gpus,"
    "   l.rate_micros_per_gpu_hour AS rate, l.on_demand_rate_micros_per_gpu_hour AS od_rate,"
    "   l.origin_at, greatest(l.started_at, w.t0) AS s, least(l.ended_at, w.t1) AS e"
    "   FROM ledger_entries l, w WHERE l.ended_at > w.t0 AND l.started_at < w.t1"
    "   AND ($3::bigint IS NULL OR l.team_id = $3)"
    "   UNION ALL"
    "   SELECT 'usage', a.job_id, j.team_id, n.pool_id, p.capacity_kind, a.gpus,"
    "   p.price_micros_per_gpu_hour, coalesce((SELECT min(o.price_micros_per_gpu_hour)"
    "     FROM pools o WHERE o.capacity_kind = 'on_demand' AND o.gpu_type = p.gpu_type),"
    "     p.price_micros_per_gpu_hour),"
    "   a.started_at, greatest(a.started_at, w.t0), least(coalesce(a.ended_at, now()), w.t1)"
    "   FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN nodes n ON n.id = a.node_id"
    "   JOIN pools p ON p.id = n.pool_id, w"
    "   WHERE (a.ended_at IS NULL OR NOT a.billed) AND a.started_at < w.t1"
    "   AND least(coalesce(a.ended_at, now()), w.t1) > greatest(a.started_at, w.t0)"
    "   AND ($3::bigint IS NULL OR j.team_id = $3)),"
    " priced AS (SELECT iv.*, frugal_cost_micros(gpus, rate, origin_at, s, e) AS amount,"
    "   frugal_cost_micros(gpus, od_rate, origin_at, s, e) AS od_amount,"
    "   gpus * extract(epoch from (e - s)) / 3600.0 AS gpu_hours FROM iv WHERE e > s)"
    " SELECT {KEY} AS key,"
    "   coalesce(sum(amount) FILTER (WHERE kind = 'usage'), 0)::bigint,"
    "   coalesce(sum(amount) FILTER (WHERE kind = 'lost_work'), 0)::bigint,"
    "   coalesce(sum(gpu_hours) FILTER (WHERE kind = 'usage'), 0)::float8,"
    "   count(DISTINCT x.job_id),"
    "   count(DISTINCT x.job_id) FILTER (WHERE j.state = 'succeeded'),"
    "   coalesce(sum(od_amount) FILTER (WHERE kind = 'usage'), 0)::bigint,"
    "   coalesce(sum(od_amount - amount) FILTER (WHERE kind = 'usage' AND"
    "     x.capacity_kind = 'spot'), 0)::bigint"
    " FROM priced x JOIN jobs j ON j.id = x.job_id JOIN teams t ON t.id = j.team_id"
    " JOIN users u ON u.id = j.user_id JOIN pools p ON p.id = x.pool_id"
    " GROUP BY {GROUP} ORDER BY 2 DESC, 1";

// `key` groups the rows; a constant key (the total) groups everything into one row.
std::string WithKey(std::string sql, const std::string& key, bool constant = false) {
  for (auto pos = sql.find("{KEY}"); pos != std::string::npos; pos = sql.find("{KEY}"))
    sql.replace(pos, 5, key);
  const auto pos = sql.find("{GROUP}");
  sql.replace(pos, 7, constant ? "()" : key);
  return sql;
}

CostRow ParseRow(const PgResult& r, int i) {
  CostRow row;
  row.key = r.Text(i, 0);
  row.spend = r.Int(i, 1);
  row.wasted = r.Int(i, 2);
  row.gpu_hours = r.Double(i, 3);
  row.jobs = static_cast<int>(r.Int(i, 4));
  row.succeeded_jobs = static_cast<int>(r.Int(i, 5));
  row.on_demand_equivalent = r.Int(i, 6);
  row.spot_savings = r.Int(i, 7);
  return row;
}

}  // namespace

StatusOr<CostReport> PgStore::Cost(const CostQuery& q) {
  return InTransaction<CostReport>(pool_, [&](PgConn& c) -> StatusOr<CostReport> {
    RETURN_IF_ERROR(
        c.ExecScript("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").status());
    CostReport rep;
    // The window: from the first attempt (or `from`) to now (or `to`), in database time.
    ASSIGN_OR_RETURN(
        auto w, c.Exec("cost_window",
                       "SELECT " FRUGAL_US("coalesce($1::timestamptz, (SELECT min(started_at)"
                       " FROM attempts), now())") ", " FRUGAL_US("coalesce($2::timestamptz,"
                       " now())"),
                       {q.from ? PgParam(pg::ToTimeParam(*q.from)) : PgParam(),
                        q.to ? PgParam(pg::ToTimeParam(*q.to)) : PgParam()}));
    rep.from = pg::FromMicros(w.Int(0, 0));
    rep.to = pg::FromMicros(w.Int(0, 1));
    if (rep.to < rep.from) return InvalidArgument("to must not be before from", "to");
    const std::vector<PgParam> params = {
        pg::ToTimeParam(rep.from), pg::ToTimeParam(rep.to),
        q.team ? PgParam(std::to_string(*q.team)) : PgParam()};
    const std::string by = ToString(q.by);
    ASSIGN_OR_RETURN(auto r, c.Exec("cost_by_" + by, WithKey(kCostRows, KeyExpression(q.by)),
                                    params));
    for (int i = 0; i < r.rows(); ++i) rep.rows.push_back(ParseRow(r, i));
    ASSIGN_OR_RETURN(auto t, c.Exec("cost_total", WithKey(kCostRows, "'total'::text", true), params));
    rep.total = t.rows() > 0 ? ParseRow(t, 0) : CostRow{};
    rep.total.key = "total";
    if (q.team) return rep;  // pool utilisation is cluster-wide: admins only
    ASSIGN_OR_RETURN(auto pools, c.Exec("cost_pools", WithKey(kCostRows, "x.pool_id::text"),
                                        params));
    ASSIGN_OR_RETURN(
        auto pl,
        c.Exec("cost_pool_paid",
               "SELECT p.id, p.name, p.capacity_kind, " FRUGAL_PAID_GPUS("p") ","
               " p.price_micros_per_gpu_hour,"
               " greatest($1::timestamptz, p.created_at) AS s FROM pools p ORDER BY p.name",
               {params[0]}));
    for (int i = 0; i < pl.rows(); ++i) {
      PoolUse use;
      use.pool = pl.Text(i, 1);
      use.capacity_kind = pl.Text(i, 2);
      for (int k = 0; k < pools.rows(); ++k) {
        if (pools.Text(k, 0) != pl.Text(i, 0)) continue;
        use.busy_gpu_hours = pools.Double(k, 3);
        use.spend = pools.Int(k, 1);
      }
      use.paid_gpu_hours = use.busy_gpu_hours;
      if (use.capacity_kind == "reserved") {
        ASSIGN_OR_RETURN(
            auto paid, c.Exec("cost_reserved_paid",
                              "SELECT frugal_cost_micros($1::int, $2::bigint, $3::timestamptz,"
                              " $3::timestamptz, greatest($3::timestamptz, $4::timestamptz)),"
                              " $1::int * extract(epoch from greatest(interval '0',"
                              " $4::timestamptz - $3::timestamptz)) / 3600.0",
                              {pl.Text(i, 3), pl.Text(i, 4), pl.Text(i, 5),
                               pg::ToTimeParam(rep.to)}));
        use.paid_gpu_hours = paid.Double(0, 1);
        use.idle_reserved = std::max<Micros>(0, paid.Int(0, 0) - use.spend);
      }
      rep.pools.push_back(std::move(use));
    }
    return rep;
  });
}

}  // namespace frugal::store
