// The dashboard's read-only views (dashboard_views.h): recent interruptions, a job's
// timeline and the jobs list's summaries of it. Money is the ledger's F
// (frugal_cost_micros), so an attempt's cost here is the amount the cost report counts.
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

namespace {

// $1 team filter (bigint or NULL), $2 limit. Preemptions, lost nodes, the idle
// guardrail's stops of jobs that never checkpointed (ended cancelled), and a reclaimed
// gang's parts that ended otherwise (a rank whose program failed when its peer vanished:
// the ledger counts its lost work, decision 0032), with the cause of the part that broke
// the gang. The next attempt of the same job is the recovery (for a gang, its rank 0);
// lost work comes from the ledger (billed attempts only: an attempt is billed when it
// ends, a gang's parts when its last part ends).
constexpr const char* kInterruptions =
    "SELECT a.job_id, j.name, t.name, a.number, p.name, n.name, a.end_reason,"
    " coalesce(" FRUGAL_STOP_KIND("a") ", CASE WHEN a.end_reason NOT IN ('preempted',"
    "   'node_lost') THEN (SELECT " FRUGAL_STOP_KIND("g") " FROM attempts g WHERE"
    "   g.job_id = a.job_id AND g.number = a.number AND g.end_reason IN ('preempted',"
    "   'node_lost') ORDER BY g.ended_at, g.id LIMIT 1) END, ''), " FRUGAL_US("a.ended_at") ","
    " coalesce((SELECT sum(l.amount_micros) FROM ledger_entries l WHERE l.attempt_id = a.id"
    "   AND l.kind = 'lost_work'), 0)::bigint,"
    " b.number, bp.name, " FRUGAL_US("b.started_at")
    " FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN teams t ON t.id = j.team_id"
    " JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
    " LEFT JOIN attempts b ON b.job_id = a.job_id AND b.number = a.number + 1 AND b.rank = 0"
    " LEFT JOIN nodes bn ON bn.id = b.node_id LEFT JOIN pools bp ON bp.id = bn.pool_id"
    " WHERE (a.end_reason IN ('preempted', 'node_lost')"
    "   OR (a.end_reason = 'cancelled' AND a.idle_stopped_at IS NOT NULL)"
    "   OR (a.gang_size > 1 AND EXISTS (SELECT 1 FROM ledger_entries l"
    "     WHERE l.attempt_id = a.id AND l.kind = 'lost_work')))"
    " AND ($1::bigint IS NULL OR j.team_id = $1::bigint)"
    " ORDER BY a.ended_at DESC, a.id DESC LIMIT $2::int";

// $1 job id.
constexpr const char* kTimelineAttempts =
    "SELECT a.id, a.number, p.name, p.capacity_kind, n.name, a.gpus, " FRUGAL_US("a.started_at")
    ", " FRUGAL_US("a.ended_at") ", coalesce(a.end_reason, ''),"
    " (" FRUGAL_ATTEMPT_COST ")::bigint, (" FRUGAL_ATTEMPT_LOST ")::bigint,"
    " coalesce(" FRUGAL_STOP_KIND("a") ", '')"
    " FROM attempts a JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
    " WHERE a.job_id = $1::bigint ORDER BY a.number";

// $1 job ids (bigint[]). Per job: the latest attempt's pool, the sums of the timeline's
// per-attempt figures. attempts (job_id, number) is unique, so this reads by index.
constexpr const char* kJobSummaries =
    "SELECT a.job_id, (array_agg(p.name ORDER BY a.number DESC))[1],"
    " sum(" FRUGAL_ATTEMPT_COST ")::bigint, sum(" FRUGAL_ATTEMPT_LOST ")::bigint"
    " FROM attempts a JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
    " WHERE a.job_id = ANY($1::bigint[]) GROUP BY a.job_id";

}  // namespace

StatusOr<std::vector<Interruption>> PgStore::RecentInterruptions(
    std::optional<model::TeamId> team, int limit) {
  return InTransaction<std::vector<Interruption>>(
      pool_, [&](PgConn& c) -> StatusOr<std::vector<Interruption>> {
        ASSIGN_OR_RETURN(auto r, c.Exec("dashboard_interruptions", kInterruptions,
                                        {team ? PgParam(std::to_string(*team)) : PgParam(),
                                         std::to_string(limit)}));
        std::vector<Interruption> out;
        for (int i = 0; i < r.rows(); ++i) {
          Interruption x;
          x.job = r.Int(i, 0);
          x.job_name = r.Text(i, 1);
          x.team = r.Text(i, 2);
          x.attempt = static_cast<int>(r.Int(i, 3));
          x.pool = r.Text(i, 4);
          x.node = r.Text(i, 5);
          x.reason = r.Text(i, 6);
          const std::string kind = r.Text(i, 7);
          // The same causes as frugal_preemptions_total.
          x.cause = kind == "priority_preemption" ? "priority" : kind.empty() ? "node" : kind;
          x.ended_at = pg::FromMicros(r.Int(i, 8));
          x.lost = r.Int(i, 9);
          if (!r.IsNull(i, 10)) {
            x.next_attempt = static_cast<int>(r.Int(i, 10));
            x.next_pool = r.Text(i, 11);
            x.next_started_at = pg::FromMicros(r.Int(i, 12));
          }
          out.push_back(std::move(x));
        }
        return out;
      });
}

StatusOr<JobTimeline> PgStore::JobTimeline(model::JobId id,
                                           std::optional<model::TeamId> visible_team) {
  return InTransaction<store::JobTimeline>(pool_, [&](PgConn& c) -> StatusOr<store::JobTimeline> {
    RETURN_IF_ERROR(
        c.ExecScript("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY").status());
    ASSIGN_OR_RETURN(auto j, c.Exec("dashboard_timeline_job",
                                    "SELECT " FRUGAL_US("now()") " FROM jobs WHERE id = $1::bigint"
                                    " AND ($2::bigint IS NULL OR team_id = $2::bigint)",
                                    {std::to_string(id), visible_team
                                                             ? PgParam(std::to_string(*visible_team))
                                                             : PgParam()}));
    if (j.rows() == 0) return NotFound("job " + std::to_string(id) + " not found");
    store::JobTimeline t;
    t.job = id;
    t.now = pg::FromMicros(j.Int(0, 0));
    ASSIGN_OR_RETURN(auto a, c.Exec("dashboard_timeline_attempts", kTimelineAttempts,
                                    {std::to_string(id)}));
    for (int i = 0; i < a.rows(); ++i) {
      TimelineAttempt x;
      x.id = a.Int(i, 0);
      x.number = static_cast<int>(a.Int(i, 1));
      x.pool = a.Text(i, 2);
      x.capacity_kind = a.Text(i, 3);
      x.node = a.Text(i, 4);
      x.gpus = static_cast<int>(a.Int(i, 5));
      x.started_at = pg::FromMicros(a.Int(i, 6));
      if (!a.IsNull(i, 7)) x.ended_at = pg::FromMicros(a.Int(i, 7));
      x.end_reason = a.Text(i, 8);
      x.cost = a.Int(i, 9);
      x.lost = a.Int(i, 10);
      x.stop_kind = a.Text(i, 11);
      t.attempts.push_back(std::move(x));
    }
    ASSIGN_OR_RETURN(auto k, c.Exec("dashboard_timeline_checkpoints",
                                    "SELECT attempt_id, step, progress, " FRUGAL_US("created_at")
                                    " FROM checkpoints WHERE job_id = $1::bigint"
                                    " ORDER BY created_at, step",
                                    {std::to_string(id)}));
    for (int i = 0; i < k.rows(); ++i) {
      t.checkpoints.push_back(
          {k.Int(i, 0), k.Int(i, 1), k.Double(i, 2), pg::FromMicros(k.Int(i, 3))});
    }
    return t;
  });
}

StatusOr<std::map<model::JobId, JobSummary>> PgStore::JobSummaries(
    const std::vector<model::JobId>& ids) {
  using Summaries = std::map<model::JobId, JobSummary>;
  if (ids.empty()) return Summaries();
  std::string array = "{";
  for (const auto id : ids) array += (array.size() > 1 ? "," : "") + std::to_string(id);
  array += "}";
  return InTransaction<Summaries>(pool_, [&](PgConn& c) -> StatusOr<Summaries> {
    ASSIGN_OR_RETURN(auto r, c.Exec("dashboard_job_summaries", kJobSummaries, {array}));
    Summaries out;
    for (int i = 0; i < r.rows(); ++i) {
      out[r.Int(i, 0)] = JobSummary{r.Text(i, 1), r.Int(i, 2), r.Int(i, 3)};
    }
    return out;
  });
}

}  // namespace frugal::store
