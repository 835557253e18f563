// The scheduling cycle's I/O: load a consistent snapshot, apply a plan in one transaction.
#include <algorithm>
#include <cmath>
#include <tuple>

#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

namespace {

// A JSON array column as a vector; most are empty, and a window is a thousand rows.
template <typename T>
std::vector<T> JsonList(const std::string& text) {
  if (text == "[]") return {};
  return json::parse(text).get<std::vector<T>>();
}

}  // namespace

// What PlanTeamUsage decided, for TeamUsage to apply to the results.
struct PgStore::UsageRead {
  std::int64_t now_us = 0;
  bool full = false;   // the first statement refreshes the base
  bool fold = false;   // the first statement folds into it
  FairShareBase base;  // the cached base, or the next one's times when it is read
  std::vector<PgStatement> statements;
};

// The dependencies of pending job `j` still open (pending, held or running), as rows `d.id`.
#define FRUGAL_OPEN_DEPENDENCY                                                      \
  "SELECT d.id FROM jobs d WHERE d.id = ANY (j.depends_on)"                         \
  " AND d.state IN ('pending', 'held', 'running')"
// Team `t`'s pending jobs `j` that the cycle may consider now, numbered in claim order: due
// (not_before), and not a throttled array's task beyond its room (max_running less those
// running), so those take none of the window's places (decision 0026).
// Only the columns the window's reads use: a job's command, environment and labels are
// the widest part of its row, and the window's sorts need not carry them.
#define FRUGAL_TEAM_PENDING_DUE                                                         \
  "SELECT j.id, j.team_id, j.gpus, j.gpu_types, j.min_gpu_mem_gb, j.priority_rank,"     \
  " j.tolerance, j.deadline, j.created_at, j.reason, j.estimate_s,"                     \
  " j.checkpoint_interval_s, j.attempt_count, j.depends_on, j.depends_on_any, j.nodes," \
  " row_number() OVER (ORDER BY j.priority_rank, j.id) AS team_rank"                    \
  " FROM jobs j WHERE j.team_id = t.id AND j.state = 'pending'"                         \
  " AND (j.not_before IS NULL OR j.not_before <= now())"
#define FRUGAL_NOT_THROTTLED                                                 \
  " AND (j.array_id IS NULL OR j.array_id NOT IN (SELECT id FROM throttled)" \
  " OR j.id IN (SELECT id FROM allowed))"

// The columns of a pending job `j` that PendingRow reads, in its order. The subqueries run
// only where they can find something: most pending jobs never ran (no checkpoint) and
// depend on nothing, and a window is thousands of rows.
#define FRUGAL_PENDING_HEAD \
  " j.id, j.team_id, j.gpus, to_json(j.gpu_types)::text, j.min_gpu_mem_gb," \
  " j.priority_rank, j.tolerance, " FRUGAL_US("j.deadline") ", " \
  FRUGAL_US("j.created_at") ", j.reason, j.estimate_s, j.checkpoint_interval_s," \
  " CASE WHEN j.attempt_count > 0 THEN (SELECT c.progress FROM checkpoints c" \
  "   WHERE c.job_id = j.id ORDER BY c.step DESC LIMIT 1) END,"
// Then what it waits on, and the first of its dependencies that failed.
#define FRUGAL_DEPENDENCY_COLUMNS                                                               \
  " CASE WHEN cardinality(j.depends_on) = 0 THEN '[]' ELSE"                                     \
  "   (SELECT coalesce(json_agg(d.id ORDER BY d.id), '[]')::text FROM (" FRUGAL_OPEN_DEPENDENCY \
  ") d) END,"                                                                                   \
  " CASE WHEN cardinality(j.depends_on) > 0 THEN (SELECT min(d.id) FROM jobs d"                 \
  "   WHERE d.id = ANY (j.depends_on) AND NOT d.id = ANY (j.depends_on_any)"                    \
  "   AND d.state IN ('failed', 'cancelled', 'timed_out')) END,"
#define FRUGAL_PENDING_COLUMNS FRUGAL_PENDING_HEAD FRUGAL_DEPENDENCY_COLUMNS " j.nodes"
// The same where no pending job depends on anything.
#define FRUGAL_PENDING_COLUMNS_NO_DEPENDENCIES FRUGAL_PENDING_HEAD " '[]', NULL::bigint, j.nodes"

namespace {

// One row of FRUGAL_PENDING_COLUMNS.
model::PendingJob PendingRow(const PgResult& p, int i) {
  model::PendingJob j;
  j.id = p.Int(i, 0);
  j.team_id = p.Int(i, 1);
  j.gpus = static_cast<int>(p.Int(i, 2));
  j.gpu_types = JsonList<std::string>(p.Text(i, 3));
  if (auto v = p.OptInt(i, 4)) j.min_gpu_mem_gb = static_cast<int>(*v);
  j.priority_rank = static_cast<int>(p.Int(i, 5));
  j.tolerance = model::ParseTolerance(p.Text(i, 6)).value();
  j.deadline = pg::OptTime(p, i, 7);
  j.created_at = pg::FromMicros(p.Int(i, 8));
  j.reason = p.Text(i, 9);
  if (auto v = p.OptInt(i, 10)) j.estimate = Seconds(*v);
  if (auto v = p.OptInt(i, 11)) j.checkpoint_interval = Seconds(*v);
  if (!p.IsNull(i, 12)) j.progress = p.Double(i, 12);
  j.waiting_for = JsonList<model::JobId>(p.Text(i, 13));
  j.failed_dependency = p.OptInt(i, 14);
  j.nodes = static_cast<int>(p.Int(i, 15));
  return j;
}

// The window read (decision 0035), one probe per team and part: each team's first jobs
// that may start (no dependency still open), through jobs_pending_by_team, and beside them
// its first jobs that wait on one, through jobs_pending_with_deps, so their reasons stay
// current without a pipeline's waiting tail taking the places of what could run. The cut
// across teams takes each team's first, then each team's second, and so on, so one team's
// deep queue never hides another's.
//
// Planned anew at every read (decision 0025), so the parts that can find nothing are left
// out (decision 0048): the throttle's two CTEs unless a throttled array has pending tasks
// (`throttled`), and the waiting part and its columns unless a pending job has
// dependencies (`dependencies`). Without both it plans in a fifth of the time.
std::string PendingWindowSql(bool throttled, bool dependencies) {
  const std::string team =
      std::string(FRUGAL_TEAM_PENDING_DUE) + (throttled ? FRUGAL_NOT_THROTTLED : "");
  std::string sql = "WITH";
  if (throttled) {
    sql +=
        " throttled AS (SELECT a.id, a.max_running - (SELECT count(*) FROM jobs r"
        "   WHERE r.array_id = a.id AND r.state = 'running') AS room FROM job_arrays a"
        "   WHERE a.max_running IS NOT NULL AND EXISTS (SELECT 1 FROM jobs p"
        "   WHERE p.array_id = a.id AND p.state = 'pending')),"
        " allowed AS (SELECT t.id FROM throttled th CROSS JOIN LATERAL (SELECT p.id FROM"
        "   jobs p WHERE p.array_id = th.id AND p.state = 'pending'"
        "   AND (p.not_before IS NULL OR p.not_before <= now())"
        "   ORDER BY p.array_index LIMIT greatest(th.room, 0)) t),";
  }
  sql += " teamed AS (SELECT j.* FROM teams t CROSS JOIN LATERAL (";
  if (dependencies) {
    sql += "(" + team + " AND (cardinality(j.depends_on) = 0 OR NOT EXISTS (" +
           FRUGAL_OPEN_DEPENDENCY
           ")) ORDER BY j.priority_rank, j.id LIMIT $2)"
           " UNION ALL (" +
           team + " AND cardinality(j.depends_on) > 0 AND EXISTS (" +
           FRUGAL_OPEN_DEPENDENCY ") ORDER BY j.priority_rank, j.id LIMIT $2)";
  } else {
    sql += team + " ORDER BY j.priority_rank, j.id LIMIT $2";
  }
  sql += ") j ORDER BY j.team_rank, j.priority_rank, j.id LIMIT $1) SELECT ";
  sql += dependencies ? FRUGAL_PENDING_COLUMNS : FRUGAL_PENDING_COLUMNS_NO_DEPENDENCIES;
  return sql + " FROM teamed j ORDER BY j.priority_rank, j.id";
}

// The read of the window's pending jobs (CycleStore::LoadSnapshot), in claim order.
// `throttled` and `dependencies` as for PendingWindowSql, read in the same transaction.
PgStatement PendingStatement(const PendingWindow& window, bool throttled, bool dependencies) {
  static const std::string kNames[4] = {"snapshot_pending", "snapshot_pending_deps",
                                        "snapshot_pending_throttled",
                                        "snapshot_pending_throttled_deps"};
  static const std::string kSql[4] = {PendingWindowSql(false, false), PendingWindowSql(false, true),
                                      PendingWindowSql(true, false), PendingWindowSql(true, true)};
  const int variant = (throttled ? 2 : 0) + (dependencies ? 1 : 0);
  return {kNames[variant],
          kSql[variant],
          {std::to_string(std::max(1, window.max_pending)),
           std::to_string(std::max(1, window.per_team))}};
}

// The window's pending jobs from PendingStatement's result `p`, then the focus job where
// the window did not reach it, in its place in claim order.
Status LoadPending(PgConn& c, const PendingWindow& window, const PgResult& p, model::Snapshot& s) {
  for (int i = 0; i < p.rows(); ++i) s.pending.push_back(PendingRow(p, i));
  if (!window.focus) return Status::Ok();
  for (const auto& j : s.pending)
    if (j.id == *window.focus) return Status::Ok();
  ASSIGN_OR_RETURN(auto f, c.Exec("snapshot_focus",
                                  "SELECT " FRUGAL_PENDING_COLUMNS
                                  " FROM jobs j WHERE j.id = $1 AND j.state = 'pending'",
                                  {std::to_string(*window.focus)}));
  if (f.rows() == 0) return Status::Ok();
  model::PendingJob job = PendingRow(f, 0);
  auto at = std::find_if(s.pending.begin(), s.pending.end(), [&](const model::PendingJob& o) {
    return std::tie(o.priority_rank, o.id) > std::tie(job.priority_rank, job.id);
  });
  s.pending.insert(at, std::move(job));
  return Status::Ok();
}

// Every attempt that has not ended, with what the policy and the idle guardrail weigh.
const PgStatement kRunning = {
    "snapshot_running",
             "SELECT a.id, a.job_id, a.node_id, a.gpus, j.priority_rank, n.pool_id, "
             FRUGAL_US("a.started_at") ", " FRUGAL_US("ck.created_at") ", ck.progress,"
             " j.tolerance, " FRUGAL_US("j.deadline") ", j.estimate_s, j.checkpoint_interval_s,"
             " to_json(j.gpu_types)::text, j.min_gpu_mem_gb, "
             FRUGAL_US("j.priority_preempted_at") ","
             " a.stop_reason IS NOT NULL OR j.cancel_requested_at IS NOT NULL, j.team_id,"
             " n.name, " FRUGAL_US("a.idle_since") ", a.idle_warned_at IS NOT NULL,"
             " t.idle_policy, j.idle_requeues, pcr.min_run_time_s, a.gang_size"
             " FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN nodes n ON n.id = a.node_id"
             " JOIN teams t ON t.id = j.team_id"
             " LEFT JOIN priority_class_runtimes pcr ON pcr.priority = j.priority"
             " LEFT JOIN LATERAL (SELECT c.created_at, c.progress FROM checkpoints c"
             "   WHERE c.job_id = a.job_id ORDER BY c.step DESC LIMIT 1) ck ON true"
             " WHERE a.ended_at IS NULL ORDER BY a.id",
    {}};

void ParseRunning(const PgResult& r, model::Snapshot& s) {
  for (int i = 0; i < r.rows(); ++i) {
    model::RunningAttempt a;
    a.attempt_id = r.Int(i, 0);
    a.job_id = r.Int(i, 1);
    a.node_id = r.Int(i, 2);
    a.gpus = static_cast<int>(r.Int(i, 3));
    a.priority_rank = static_cast<int>(r.Int(i, 4));
    a.pool_id = r.Int(i, 5);
    a.started_at = pg::FromMicros(r.Int(i, 6));
    a.last_checkpoint_at = pg::OptTime(r, i, 7);
    if (!r.IsNull(i, 8)) a.progress = r.Double(i, 8);
    a.tolerance = model::ParseTolerance(r.Text(i, 9)).value();
    a.deadline = pg::OptTime(r, i, 10);
    if (auto v = r.OptInt(i, 11)) a.estimate = Seconds(*v);
    if (auto v = r.OptInt(i, 12)) a.checkpoint_interval = Seconds(*v);
    a.gpu_types = JsonList<std::string>(r.Text(i, 13));
    if (auto v = r.OptInt(i, 14)) a.min_gpu_mem_gb = static_cast<int>(*v);
    a.last_priority_preemption_at = pg::OptTime(r, i, 15);
    a.stopping = r.Bool(i, 16);
    a.team_id = r.Int(i, 17);
    a.node_name = r.Text(i, 18);
    a.idle_since = pg::OptTime(r, i, 19);
    a.idle_warned = r.Bool(i, 20);
    a.idle_policy = r.Text(i, 21) == "requeue" ? model::IdlePolicy::kRequeue
                                               : model::IdlePolicy::kWarn;
    a.idle_requeues = static_cast<int>(r.Int(i, 22));
    if (auto v = r.OptInt(i, 23)) a.min_run_time = Seconds(*v);
    a.gang_size = static_cast<int>(r.Int(i, 24));
    s.running.push_back(std::move(a));
  }
}

// The nodes that may take work: live, leased and not drained; with when each went idle.
const PgStatement kLiveNodes = {"snapshot_nodes",
                                  "SELECT id, name, pool_id, gpus, gpu_type, gpu_mem_gb, "
                                  FRUGAL_US("lease_expires_at") ","
                                  // Idle since the last attempt here ended (or it joined).
                                  " CASE WHEN EXISTS (SELECT 1 FROM attempts a WHERE"
                                  "   a.node_id = nodes.id AND a.ended_at IS NULL) THEN NULL"
                                  " ELSE " FRUGAL_US("greatest(registered_at, (SELECT"
                                  "   max(a.ended_at) FROM attempts a WHERE a.node_id ="
                                  "   nodes.id))") " END"
                                  " FROM nodes"
                                  // An admin-drained node takes nothing new
                                  // (decision 0021); its attempts are in `running`.
                                  " WHERE state = 'live' AND lease_expires_at > now()"
                                  " AND drained_at IS NULL ORDER BY id",
                                  {}};

void ParseLiveNodes(const PgResult& n, model::Snapshot& s) {
  for (int i = 0; i < n.rows(); ++i) {
    model::Node node;
    node.id = n.Int(i, 0);
    node.name = n.Text(i, 1);
    node.pool_id = n.Int(i, 2);
    node.gpus = static_cast<int>(n.Int(i, 3));
    node.gpu_type = n.Text(i, 4);
    node.gpu_mem_gb = static_cast<int>(n.Int(i, 5));
    node.lease_expires_at = pg::FromMicros(n.Int(i, 6));
    node.idle_since = pg::OptTime(n, i, 7);
    s.nodes.push_back(std::move(node));
  }
}

}  // namespace

// The snapshot's first statement: the database's now(), the idle settings, and, read in the
// statement that takes the snapshot, the oldest transaction open (for fair share's fold).
// Then what the window read must plan for (LoadPending). Not EXISTS: this plan is cached,
// and with no statistics on cardinality() PostgreSQL took a scan of `jobs` that stops at
// the first match for one, and read the whole table when none matched. An index order and
// a probe per throttled array keep each to its index.
constexpr const char* kSnapshotNowIdle =
    "SELECT " FRUGAL_US("now()") ","
    " (SELECT idle_threshold_percent FROM guardrail_settings),"
    " (SELECT idle_window_s FROM guardrail_settings),"
    " (SELECT " FRUGAL_US("min(xact_start)") " FROM pg_stat_activity"
    "   WHERE datname = current_database() AND pid <> pg_backend_pid()),"
    " (SELECT true FROM job_arrays a CROSS JOIN LATERAL (SELECT 1 FROM jobs p"
    "   WHERE p.array_id = a.id AND p.state = 'pending' LIMIT 1) p"
    "   WHERE a.max_running IS NOT NULL LIMIT 1) IS NOT NULL,"
    " (SELECT true FROM jobs WHERE state = 'pending' AND cardinality(depends_on) > 0"
    "   ORDER BY team_id, priority_rank, id LIMIT 1) IS NOT NULL,"
    " EXISTS (SELECT 1 FROM team_budgets)";

// How the snapshot's transaction begins: one consistent view for the whole snapshot.
// The first pipeline's reads keep the plans PostgreSQL caches for them: all but the sweep's
// check have no parameter, and that one reads two small tables by equality (planned anew
// each cycle, it cost eight times its execution).
constexpr const char* kSnapshotBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY";
// The window read keeps one plan until the tables' statistics change (decision 0058):
// planned anew each cycle (decision 0025) it cost 0.28 ms of a 4.8 ms cycle. A plan made
// for a nearly empty `jobs` is replaced within a second of a burst, when the statistics
// keeper analyzes the table (decision 0040).
const PgStatement kWindowPlanKept = {
    "snapshot_window_plan_kept", "SET LOCAL plan_cache_mode = force_generic_plan", {}};
// The reads after it are planned with their parameters at each cycle: fair share's reads
// range over `attempts` from a given time, which a plan made without the time would take
// to be a third of the table.
const PgStatement kCustomPlans = {
    "snapshot_custom_plans", "SET LOCAL plan_cache_mode = force_custom_plan", {}};

StatusOr<model::Snapshot> PgStore::LoadSnapshot(const PendingWindow& window) {
  return LoadSnapshotWith(window, nullptr, nullptr);
}

StatusOr<CycleRead> PgStore::SweepAndLoadSnapshot(const PendingWindow& window) {
  // The sweep's read rides in the snapshot's first round trip (decision 0057). Nearly
  // every cycle it finds nothing to sweep, and the snapshot stands. Otherwise the sweep
  // runs as SweepLostNodes would, and the snapshot is taken again after it, so the jobs of
  // a lost node are pending in this very cycle, as before.
  ASSIGN_OR_RETURN(const PgStatement check, SweepCheck());
  CycleRead read;
  bool due = false;
  ASSIGN_OR_RETURN(read.snapshot, LoadSnapshotWith(window, &check, &due));
  if (!due) return read;
  ASSIGN_OR_RETURN(read.lost, SweepFenced());
  ASSIGN_OR_RETURN(read.snapshot, LoadSnapshot(window));
  return read;
}

StatusOr<model::Snapshot> PgStore::LoadSnapshotWith(const PendingWindow& window,
                                                    const PgStatement* sweep_check,
                                                    bool* sweep_due) {
  return InTransaction<model::Snapshot>(
      pool_, kSnapshotBegin, [&](PgConn& c) -> StatusOr<model::Snapshot> {
        model::Snapshot s;
        // Two pipelines (decision 0049): what needs nothing from another read, then what
        // needs the first statement's answers. Each costs one round trip.
        std::vector<PgStatement> first = {{"snapshot_now_idle", kSnapshotNowIdle, {}},
                                          kRunning,
                                          kLiveNodes,
                                          pg::QuotasStatement()};
        for (auto& p : pg::PoolsStatements()) first.push_back(std::move(p));
        if (sweep_check) first.push_back(*sweep_check);
        ASSIGN_OR_RETURN(auto r, c.ExecPipeline(first));
        if (sweep_check) *sweep_due = SweepDue(r.back());
        const PgResult& now = r[0];
        s.now = pg::FromMicros(now.Int(0, 0));
        // With the idle reclamation settings (one row; the defaults if it were missing).
        if (auto v = now.OptInt(0, 1)) s.idle_threshold_percent = static_cast<int>(*v);
        if (auto v = now.OptInt(0, 2)) s.idle_window = Seconds(*v);
        ParseRunning(r[1], s);
        ParseLiveNodes(r[2], s);
        s.quotas = pg::ParseQuotas(r[3]);
        s.pools = pg::ParsePools(r[4], r[5], &availability_cache_);
        const UsageRead usage_read = PlanTeamUsage(now.Int(0, 0), now.OptInt(0, 3));
        std::vector<PgStatement> second = {kWindowPlanKept};
        const std::size_t window_at = second.size();
        second.push_back(PendingStatement(window, now.Bool(0, 4), now.Bool(0, 5)));
        second.push_back(kCustomPlans);
        const std::size_t usage_at = second.size();
        for (const auto& u : usage_read.statements) second.push_back(u);
        // With no read to follow (no budget, no focus job), the transaction ends in this
        // round trip instead of one more for COMMIT (decision 0057).
        const bool last = !now.Bool(0, 6) && !window.focus;
        if (last) second.push_back({"snapshot_commit", "COMMIT", {}});
        ASSIGN_OR_RETURN(auto p, c.ExecPipeline(second));
        RETURN_IF_ERROR(LoadPending(c, window, p[window_at], s));
        for (const auto& [team, hours] : TeamUsage(usage_read, &p[usage_at])) {
          s.team_usage[team] = {hours, s.now};
        }
        // Most clusters have no budget: their use is read only where one is set.
        if (now.Bool(0, 6)) {
          ASSIGN_OR_RETURN(s.budgets, pg::LoadBudgets(c));
        }
        return s;
      });
}

#undef FRUGAL_PENDING_COLUMNS_NO_DEPENDENCIES
#undef FRUGAL_PENDING_COLUMNS
#undef FRUGAL_DEPENDENCY_COLUMNS
#undef FRUGAL_PENDING_HEAD
#undef FRUGAL_NOT_THROTTLED
#undef FRUGAL_TEAM_PENDING_DUE
#undef FRUGAL_OPEN_DEPENDENCY

namespace {

// Fair share counts each attempt's GPU-hours halved every 7 days after it ended, over the
// last 8 half-lives. The whole sum is retaken this often; an attempt ending later than the
// cut, or still running, is read by every snapshot.
constexpr std::int64_t kFairShareRefreshUs = 10LL * 60 * 1000000;
// The cut trails the refresh: a transaction that set ended_at = now() before the cut but
// commits after the refresh read is still counted by the per-snapshot read.
constexpr std::int64_t kFairShareCutLagUs = 2LL * 60 * 1000000;
// Between refreshes the attempts that ended since the cut are folded into the cached sum
// this often, and the cut moves to this far behind now, and never past the start of the
// oldest transaction still open (decision 0035): an attempt's ended_at is its ending
// transaction's now(), so one not committed yet ends after the cut and the per-snapshot
// read finds it. (The open transactions are read in the statement that takes the snapshot;
// one that commits in between, microseconds, is missed until the next retake.) A busy
// queue ends hundreds of attempts a second, and reading ten minutes of them every cycle
// cost more than the rest of the snapshot.
// A fold every twentieth of a second (decision 0048; every 0.2 s in 0040, 0.5 s in 0036,
// 1 s and 3 s before): a drain ends ~1,200 attempts a second, and what the per-snapshot read
// sums is what ended since the cut, 0.7 ms of a 7.7 ms cycle at 0.2 s. The lag stays at a
// fifth of a second: it is what covers a transaction that commits between the snapshot and
// its read of the open ones, for as long as that transaction ran.
constexpr std::int64_t kFairShareFoldUs = 50000;
constexpr std::int64_t kFairShareFoldLagUs = 200000;
constexpr double kHalfLifeSeconds = 604800.0;

// An attempt's GPU-hours decayed to now(), `end` being when it ended (or now()). In double
// precision: extract() is numeric, and numeric power() cost 5 µs a row.
#define FRUGAL_DECAYED_HOURS(end)                                                   \
  "a.gpus * date_part('epoch', " end " - a.started_at) / 3600.0 * power(0.5,"       \
  " date_part('epoch', now() - " end ") / 604800.0)"
// Decayed GPU-hours by team of the attempts ended in ($1, $2] (µs), over the last 8
// half-lives: a join, for a refresh that reads every attempt of 56 days.
// Each attempt's team is its own column (decision 0051): no job is read.
constexpr const char* kUsageAll =
    "SELECT a.team_id, sum(" FRUGAL_DECAYED_HOURS("a.ended_at") ")"
    " FROM attempts a"
    " WHERE a.ended_at > greatest(to_timestamp($1::bigint / 1e6), now() - interval '56 days')"
    " AND a.ended_at <= to_timestamp($2::bigint / 1e6) GROUP BY a.team_id";
// The same for a few seconds of attempts.
constexpr const char* kUsageRecent =
    "SELECT a.team_id, sum(" FRUGAL_DECAYED_HOURS("a.ended_at") ")"
    " FROM attempts a WHERE a.ended_at > to_timestamp($1::bigint / 1e6)"
    " AND a.ended_at <= to_timestamp($2::bigint / 1e6) GROUP BY a.team_id";

double Decay(std::int64_t from_us, std::int64_t to_us) {
  return std::pow(0.5, static_cast<double>(to_us - from_us) / 1e6 / kHalfLifeSeconds);
}

}  // namespace

PgStore::UsageRead PgStore::PlanTeamUsage(std::int64_t now_us,
                                          std::optional<std::int64_t> open_since_us) {
  UsageRead read;
  read.now_us = now_us;
  FairShareBase base;
  {
    std::lock_guard<std::mutex> lock(fair_share_mu_);
    base = fair_share_;
  }
  // A snapshot older than the cached total (a slow `why` beside the cycle) reads past it.
  read.full = base.full_at_us == 0 || now_us - base.full_at_us > kFairShareRefreshUs;
  std::int64_t fold_cut = now_us - kFairShareFoldLagUs;
  read.fold = !read.full && now_us - base.at_us > kFairShareFoldUs && fold_cut > base.cut_us;
  if (read.fold && open_since_us) fold_cut = std::min(fold_cut, *open_since_us - 1);
  read.fold = read.fold && fold_cut > base.cut_us;
  if (read.full || read.fold) {
    // A refresh sums the last 8 half-lives; a fold, what ended since the last cut.
    const std::int64_t from_us = read.full ? 0 : base.cut_us;
    const std::int64_t cut_us = read.full ? now_us - kFairShareCutLagUs : fold_cut;
    read.statements.push_back({read.full ? "fair_share_all" : "fair_share_fold",
                               read.full ? kUsageAll : kUsageRecent,
                               {std::to_string(from_us), std::to_string(cut_us)}});
    if (read.full) base.hours.clear();
    base = {read.full ? now_us : base.full_at_us, base.at_us, cut_us, std::move(base.hours)};
  }
  read.statements.push_back(
      {"fair_share_recent",
       "SELECT a.team_id, sum(" FRUGAL_DECAYED_HOURS("coalesce(a.ended_at, now())") ")"
       " FROM attempts a WHERE a.ended_at > to_timestamp($1::bigint / 1e6)"
       " OR a.ended_at IS NULL GROUP BY a.team_id",
       {std::to_string(base.cut_us)}});
  read.base = std::move(base);
  return read;
}

std::map<model::TeamId, double> PgStore::TeamUsage(const UsageRead& read, const PgResult* results) {
  FairShareBase base = read.base;
  if (read.full || read.fold) {
    // The base's terms decay from when it was taken to now, then what the read found
    // ended since its cut joins them.
    const double decay = Decay(base.at_us, read.now_us);
    for (auto& [team, hours] : base.hours) hours *= decay;
    base.at_us = read.now_us;
    const PgResult& u = results[0];
    for (int i = 0; i < u.rows(); ++i) base.hours[u.Int(i, 0)] += u.Double(i, 1);
    std::lock_guard<std::mutex> lock(fair_share_mu_);
    fair_share_ = base;
  }
  // Every term of the base decays by the same factor since it was taken.
  const PgResult& d = results[read.statements.size() - 1];
  const double decay = Decay(base.at_us, read.now_us);
  std::map<model::TeamId, double> out;
  for (const auto& [team, hours] : base.hours) out[team] = hours * decay;
  for (int i = 0; i < d.rows(); ++i) out[d.Int(i, 0)] += d.Double(i, 1);
  return out;
}

#undef FRUGAL_DECAYED_HOURS

namespace pg {

std::vector<PgStatement> PoolsStatements() {
  return {
      // Kept as written: clang-format splits these strings a word per line at each macro.
      // clang-format off
      {"load_pools",
       "SELECT p.id, p.name, p.capacity_kind, p.gpu_type, p.gpu_mem_gb, p.speed,"
       " p.price_micros_per_gpu_hour, p.max_gpus, p.startup_delay_s, p.idle_timeout_s,"
       " p.preemption_prior_per_node_hour, coalesce(o.notices, 0), coalesce(o.node_hours, 0),"
       " coalesce(u.outages, 0), coalesce(u.outage_hours, 0), p.committed_gpus,"
       " coalesce(o.largest, 0), coalesce(o.live_gpus, 0), pa.fitted_model, "
       FRUGAL_US("pa.fitted_at") ","
       // Up: a live node, or no evidence against it (no node yet, or the last one released, and
       // no stockout since).
       " coalesce(av.up_now, false) OR (so.at IS NULL AND"
       "   coalesce(av.last_released, true)), extract(epoch from now() - CASE WHEN av.up_now"
       " THEN av.spell_start WHEN so.at IS NOT NULL AND coalesce(av.last_released, true) THEN"
       " so.at WHEN so.at IS NULL AND coalesce(av.last_released, true) THEN now() ELSE"
       " av.last_end END), NOT coalesce(av.up_now, false) AND so.at IS NULL AND"
       " coalesce(av.last_released, true)"
       " FROM pools p"
       " LEFT JOIN ("
       "   SELECT pool_id, count(notice_at) AS notices,"
       "   sum(extract(epoch from (coalesce(last_heartbeat_at,"
       "   registered_at) - registered_at))) / 3600.0 AS node_hours,"
       // Node shapes: the biggest node the pool ever had (removed ones excepted), and the GPUs
       // live now.
       "   max(gpus) FILTER (WHERE state <> 'gone') AS largest,"
       "   sum(gpus) FILTER (WHERE state = 'live'"
       "     AND lease_expires_at > now()) AS live_gpus"
       "   FROM nodes GROUP BY pool_id) o ON o.pool_id = p.id"
       // Outages: gaps in the union of a spot pool's node lives, a node registering after every
       // earlier one had gone.
       " LEFT JOIN (SELECT pool_id, count(*) AS outages,"
       "   sum(gap) / 3600.0 AS outage_hours FROM ("
       "     SELECT n.pool_id, extract(epoch from n.registered_at -"
       "     max(coalesce(n.last_heartbeat_at, n.registered_at)) OVER ("
       "       PARTITION BY n.pool_id ORDER BY n.registered_at, n.id"
       "       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)) AS gap"
       "     FROM nodes n JOIN pools sp ON sp.id = n.pool_id"
       "     WHERE sp.capacity_kind = 'spot') g"
       "   WHERE gap > 0 GROUP BY pool_id) u ON u.pool_id = p.id"
       " LEFT JOIN pool_availability pa ON pa.pool_id = p.id"
       // Availability now (decision 0023), as the refit derives spells: up while a life reaches
       // now; an up spell began at the last life that started after all earlier ones had ended,
       // a down spell at the last life's end. The released flag is the last-ending life's
       // (false first: a tie is released only if all its lives were).
       " LEFT JOIN (SELECT pool_id, bool_or(ongoing) AS up_now,"
       "   max(life_end) AS last_end,"
       "   (array_agg(released ORDER BY life_end DESC, released))[1]"
       "     AS last_released,"
       "   max(registered_at) FILTER (WHERE starts_spell) AS spell_start"
       "   FROM (SELECT n.pool_id, n.registered_at, " FRUGAL_LIFE_END("n") "     AS life_end, "
       FRUGAL_LIFE_RELEASED("n") " AS released,"
       "     n.notice_at IS NULL AND n.state IN ('live',"
       "     'draining') AND n.lease_expires_at > now() AS ongoing,"
       "     coalesce(n.registered_at > max(" FRUGAL_LIFE_END("n") ") OVER ("
       "       PARTITION BY n.pool_id ORDER BY n.registered_at, n.id"
       "       ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), true)"
       "       AS starts_spell"
       "     FROM nodes n JOIN pools sp ON sp.id = n.pool_id"
       "     WHERE sp.capacity_kind = 'spot') l"
       "   GROUP BY pool_id) av ON av.pool_id = p.id"
       // The first stockout since the last life ended.
       " LEFT JOIN LATERAL (SELECT min(i.ended_at) AS at FROM"
       "   instances i WHERE p.capacity_kind = 'spot' AND"
       "   i.pool_id = p.id AND i.reason = 'stockout' AND"
       "   i.ended_at > coalesce(av.last_end, '-infinity')) so ON true ORDER BY p.id",
       {}},
      // clang-format on
      // Gangs' models (decision 0032), for the spot pools that have them.
      {"load_gang_availability",
       "SELECT g.pool_id, g.nodes, g.fitted_model,"
       " " FRUGAL_US("g.fitted_at") " FROM pool_gang_availability g"
                                    " JOIN pools p ON p.id = g.pool_id"
                                    " WHERE p.capacity_kind = 'spot'",
       {}}};
}

std::vector<model::Pool> ParsePools(const PgResult& pl, const PgResult& g,
                                    AvailabilityCache* cache) {
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
    pool.startup_delay = Seconds(pl.Int(i, 8));
    pool.idle_timeout = Seconds(pl.Int(i, 9));
    pool.preemption_prior_per_node_hour = pl.Double(i, 10);
    if (pool.kind == model::CapacityKind::kSpot) {
      pool.preemption_rate_per_node_hour =
          model::LearnedPreemptionRate(pool.preemption_prior_per_node_hour, pl.Double(i, 11),
                                       pl.Double(i, 12));
      pool.mean_outage_hours = model::LearnedOutageHours(pl.Double(i, 13), pl.Double(i, 14));
    }
    pool.committed_gpus = static_cast<int>(pl.Int(i, 15));
    pool.largest_node_gpus = static_cast<int>(pl.Int(i, 16));
    pool.live_gpus = static_cast<int>(pl.Int(i, 17));
    if (pool.kind == model::CapacityKind::kSpot) {
      if (!pl.IsNull(i, 18) && !pl.IsNull(i, 19)) {
        if (cache) {
          pool.availability = cache->Get(pool.id, pl.Int(i, 19), pl.Text(i, 18));
        } else if (model::AvailabilityModel m; model::AvailabilityFromJson(pl.Text(i, 18), &m)) {
          pool.availability = std::make_shared<const model::AvailabilityModel>(std::move(m));
        }
      }
      pool.availability_now.up = pl.Bool(i, 20);
      if (!pl.IsNull(i, 21)) {
        pool.availability_now.spell_seconds =
            std::max<std::int64_t>(0, static_cast<std::int64_t>(pl.Double(i, 21)));
      }
      pool.availability_now.assumed = pl.Bool(i, 22);
    }
    out.push_back(std::move(pool));
  }
  for (int i = 0; i < g.rows(); ++i) {
    const model::PoolId id = g.Int(i, 0);
    const int nodes = static_cast<int>(g.Int(i, 1));
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.id == id; });
    if (it == out.end()) continue;
    std::shared_ptr<const model::AvailabilityModel> m;
    if (cache) {
      m = cache->Get(id, g.Int(i, 3), g.Text(i, 2), nodes);
    } else if (model::AvailabilityModel parsed;
               model::AvailabilityFromJson(g.Text(i, 2), &parsed)) {
      m = std::make_shared<const model::AvailabilityModel>(std::move(parsed));
    }
    if (m) it->gang_availability[nodes] = std::move(m);
  }
  return out;
}

StatusOr<std::vector<model::Pool>> LoadPools(PgConn& c, AvailabilityCache* cache) {
  ASSIGN_OR_RETURN(auto r, c.ExecPipeline(PoolsStatements()));
  return ParsePools(r[0], r[1], cache);
}

std::shared_ptr<const model::AvailabilityModel> AvailabilityCache::Get(
    model::PoolId pool, std::int64_t fitted_at_us, const std::string& json_text, int nodes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& entry = by_pool_[{pool, nodes}];
  if (entry.second && entry.first == fitted_at_us) return entry.second;
  model::AvailabilityModel m;
  if (!model::AvailabilityFromJson(json_text, &m)) return nullptr;
  // A refit that changed no count keeps the same object: the learned controller's solved
  // tables are keyed on it (policy::SpotBook), and re-solving them for nothing would leave
  // jobs to the rules for seconds after every refit.
  const auto& old = entry.second;
  if (old && old->tick_seconds == m.tick_seconds && old->bin_start == m.bin_start &&
      old->stay == m.stay && old->onward == m.onward && old->flip == m.flip) {
    entry.first = fitted_at_us;
    return old;
  }
  entry = {fitted_at_us, std::make_shared<const model::AvailabilityModel>(std::move(m))};
  return entry.second;
}

}  // namespace pg

StatusOr<std::vector<model::Pool>> PgStore::ListPools() {
  return Autocommit<std::vector<model::Pool>>(
      pool_, Repeat::kReads, [this](PgConn& c) { return pg::LoadPools(c, &availability_cache_); });
}

StatusOr<PoolReading> PgStore::ReadPools() {
  return InTransaction<PoolReading>(pool_, [this](PgConn& c) -> StatusOr<PoolReading> {
    ASSIGN_OR_RETURN(auto now, c.Exec("read_pools_now", "SELECT " FRUGAL_US("now()")));
    PoolReading out;
    out.now = pg::FromMicros(now.Int(0, 0));
    ASSIGN_OR_RETURN(out.pools, pg::LoadPools(c, &availability_cache_));
    return out;
  });
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

StatusOr<AppliedPlan> PgStore::ApplyPlan(const model::Plan& plan) {
  return InTransaction<AppliedPlan>(pool_, [&](PgConn& c) -> StatusOr<AppliedPlan> {
    // One round trip for the fence and every write that needs no other's answer, with the
    // deferred BEGIN (decision 0054). The fence goes first: its lock is taken before any
    // write, and when the term has ended it raises, so the server skips every write behind
    // it and nothing is written or locked.
    std::int64_t term = 0;
    ASSIGN_OR_RETURN(auto fence, LeaderFence(&term));
    std::vector<PgStatement> head = {std::move(fence)};
    std::optional<std::size_t> assigned;
    if (!plan.assignments.empty()) {
      const auto& as = plan.assignments;
      assigned = head.size();
      // Batched: one statement starts every assignment whose job is still pending.
      head.push_back(
          {"apply_assignments",
           // Only onto nodes still live: a notice may have come since the snapshot.
           // The node rows are locked and their epoch read from the lock, not the
           // statement's snapshot: a registration committed meanwhile is seen (its new
           // epoch), and one still running waits for this transaction and then ends
           // what it assigned. Either way no attempt keeps a stale epoch.
           "WITH live AS (SELECT id, lease_epoch FROM nodes WHERE id = ANY($2::bigint[])"
           "   AND state = 'live' AND lease_expires_at > now() AND drained_at IS NULL"
           "   ORDER BY id FOR UPDATE),"
           // A job's parts (a gang spread over nodes) in plan order: rank 0 first.
           " t AS (SELECT t.*, (row_number() OVER w - 1)::int AS rank,"
           "   (count(*) OVER (PARTITION BY t.job_id))::int AS parts"
           "   FROM unnest($1::bigint[], $2::bigint[], $3::int[],"
           "   ARRAY(SELECT jsonb_array_elements_text($4::jsonb)), $5::bigint[])"
           "   WITH ORDINALITY AS t(job_id, node_id, gpus, reason, expected, ord)"
           "   WINDOW w AS (PARTITION BY t.job_id ORDER BY t.ord)),"
           " a AS (SELECT t.*, live.lease_epoch FROM t JOIN live ON live.id = t.node_id),"
           // All or nothing (decision 0032): a job starts only if every part's node
           // is still live; otherwise it stays pending and the next cycle re-plans it.
           " whole AS (SELECT job_id, min(reason) FILTER (WHERE rank = 0) AS reason,"
           "   max(parts) AS parts FROM a GROUP BY job_id HAVING count(*) = max(parts)),"
           " upd AS (UPDATE jobs j SET state = 'running', attempt_count = j.attempt_count + 1,"
           "   started_at = coalesce(j.started_at, now()), updated_at = now(),"
           "   reason = whole.reason FROM whole WHERE j.id = whole.job_id"
           // A gang has exactly its nodes' parts (a single-node job one part, or the
           // simulator's uneven spread); a policy that ignored `nodes` starts nothing.
           "   AND (j.nodes = 1 OR j.nodes = whole.parts)"
           "   AND j.state = 'pending'"
           "   RETURNING j.id, j.attempt_count, j.team_id, whole.reason),"
           // A gang's rendezvous port (decision 0032): per master node, the free
           // ports of 20000-29999 counted from a hash of its first new gang, the
           // n-th to its n-th new gang. Free: no live gang mastered there has it.
           // (Unformatted below, so the statement reads line by line as SQL.)
           // clang-format off
           " masters AS (SELECT a.job_id, a.node_id,"
           "   row_number() OVER m AS nth, first_value("
           FRUGAL_GANG_PORT_OFFSET("upd.id", "upd.attempt_count") ") OVER m AS start"
           "   FROM upd JOIN a ON a.job_id = upd.id WHERE a.rank = 0 AND a.parts > 1"
           "   WINDOW m AS (PARTITION BY a.node_id ORDER BY a.job_id)),"
           " used AS (SELECT x.node_id, x.master_port FROM attempts x WHERE x.node_id IN"
           "   (SELECT node_id FROM masters) AND x.ended_at IS NULL AND x.rank = 0"
           "   AND x.gang_size > 1 AND x.master_port IS NOT NULL),"
           " free AS (SELECT f.node_id, f.port, row_number() OVER (PARTITION BY f.node_id"
           "   ORDER BY f.k) AS nth FROM (SELECT m.node_id, k, 20000 + ((m.start + k)"
           "   % 10000)::int AS port FROM (SELECT DISTINCT node_id, start FROM masters"
           "   WHERE nth = 1) m, generate_series(0, 9999) k) f WHERE NOT EXISTS (SELECT 1"
           "   FROM used WHERE used.node_id = f.node_id AND used.master_port = f.port)),"
           " ports AS (SELECT masters.job_id, free.port FROM masters JOIN free ON"
           "   free.node_id = masters.node_id AND free.nth = masters.nth),"
           " ins AS (INSERT INTO attempts (job_id, team_id, number, rank, gang_size,"
           "   node_id, gpus, lease_epoch, expected_cost_micros, master_port)"
           "   SELECT upd.id, upd.team_id,"
           "   upd.attempt_count, a.rank, a.parts, a.node_id, a.gpus, a.lease_epoch,"
           "   greatest(a.expected, 0), ports.port"
           "   FROM upd JOIN a ON a.job_id = upd.id LEFT JOIN ports ON ports.job_id = upd.id"
           "   RETURNING job_id),"
           " ev AS (INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
           "   SELECT id, 'state_changed', 'pending', 'running', reason FROM upd)"
           " SELECT count(DISTINCT job_id) FROM ins",
           // clang-format on
           {IntArray(as, [](auto& a) { return a.job_id; }),
            IntArray(as, [](auto& a) { return a.node_id; }),
            IntArray(as, [](auto& a) { return a.gpus; }), Reasons(as),
            IntArray(as, [](auto& a) { return a.expected_cost; })}});
    }
    if (!plan.waits.empty()) {
      head.push_back(
          {"apply_waits",
           "UPDATE jobs j SET reason = w.reason FROM unnest($1::bigint[],"
           " ARRAY(SELECT jsonb_array_elements_text($2::jsonb))) AS w(job_id, reason)"
           " WHERE j.id = w.job_id AND j.state = 'pending' AND j.reason <> w.reason",
           {IntArray(plan.waits, [](auto& w) { return w.job_id; }), Reasons(plan.waits)}});
    }
    if (!plan.holds.empty()) {
      head.push_back(
          {"apply_holds",
           "WITH w AS (SELECT * FROM unnest($1::bigint[],"
           "   ARRAY(SELECT jsonb_array_elements_text($2::jsonb))) AS t(job_id, reason)),"
           // Held, not ended: the owner sees why and may cancel or resubmit.
           " upd AS (UPDATE jobs j SET state = 'held', reason = w.reason,"
           "   updated_at = now() FROM w"
           "   WHERE j.id = w.job_id AND j.state = 'pending' RETURNING j.id, w.reason)"
           " INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
           " SELECT id, 'state_changed', 'pending', 'held', reason FROM upd",
           {IntArray(plan.holds, [](auto& w) { return w.job_id; }), Reasons(plan.holds)}});
    }
    // Whether the alerts below have any budget to read (most clusters have none).
    head.push_back(pg::AnyBudgetStatement());
    auto sent = c.ExecPipeline(head);
    if (!sent.ok()) return FenceChecked(sent.status(), term);
    const std::vector<PgResult>& r = *sent;
    AppliedPlan out;
    const int started = assigned ? static_cast<int>(r[*assigned].Int(0, 0)) : 0;
    // The idle orders after the assignments, which lock their nodes first: a heartbeat
    // locks its node, then its attempts, so a transaction that locked an attempt before a
    // node could deadlock with one. Before the policy's stops, which DecideCycle has
    // already kept off the attempts the idle step stops.
    if (!plan.idle_actions.empty()) {
      ASSIGN_OR_RETURN(out.idle_stops, pg::ApplyIdleActions(c, plan.idle_actions));
    }
    if (!plan.stops.empty()) {
      // The worker gets the order with its next heartbeat, signals the job to checkpoint
      // and stop, and reports the attempt preempted; the job is pending again.
      RETURN_IF_ERROR(
          c.Exec("apply_stops",
                 "WITH s AS (SELECT * FROM unnest($1::bigint[],"
                 "   ARRAY(SELECT jsonb_array_elements_text($2::jsonb)),"
                 "   ARRAY(SELECT jsonb_array_elements_text($3::jsonb))) AS t(attempt_id, kind,"
                 "   reason)),"
                 " st AS (UPDATE attempts a SET stop_reason = 'preempted', stop_kind = s.kind"
                 "   FROM s WHERE a.id = s.attempt_id AND a.ended_at IS NULL"
                 "   AND a.stop_reason IS NULL RETURNING a.job_id, s.kind, s.reason),"
                 " pj AS (UPDATE jobs j SET priority_preempted_at = CASE WHEN st.kind ="
                 "   'priority_preemption' THEN now() ELSE j.priority_preempted_at END,"
                 "   reason = st.reason,"
                 "   updated_at = now() FROM st WHERE j.id = st.job_id)"
                 " INSERT INTO job_events (job_id, kind, message)"
                 " SELECT job_id, 'stop_ordered', kind || ': ' || reason FROM st",
                 {IntArray(plan.stops, [](auto& s) { return s.attempt_id; }),
                  [&] {
                    json a = json::array();
                    for (const auto& s : plan.stops) a.push_back(model::ToString(s.kind));
                    return a.dump();
                  }(),
                  Reasons(plan.stops)})
              .status());
    }
    out.started = started;
    // Last, so the spending includes what this plan committed.
    if (r.back().Bool(0, 0)) {
      ASSIGN_OR_RETURN(out.alerts, pg::FireBudgetAlerts(c, std::nullopt, /*any_checked=*/true));
    }
    return out;
  });
}

}  // namespace frugal::store
