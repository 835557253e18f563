// Job arrays (decision 0026): an array row and its tasks, stored in one transaction; the
// summary by state and cost; cancelling every task at once.
#include <nlohmann/json.hpp>

#include <map>

#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;
using model::JobId;

namespace {

using pg::VisibleParam;

// Whether array `id` exists and `visible_team` (when set) owns it: one index read.
StatusOr<bool> ArrayVisible(PgConn& c, std::int64_t id, std::optional<model::TeamId> visible_team) {
  ASSIGN_OR_RETURN(auto r, c.Exec("array_visible",
                                  "SELECT 1 FROM job_arrays WHERE id = $1 AND"
                                  " ($2::bigint IS NULL OR team_id = $2)",
                                  {std::to_string(id), VisibleParam(visible_team)}));
  return r.rows() > 0;
}

StatusOr<ArraySummary> LoadArray(PgConn& c, std::int64_t id,
                                 std::optional<model::TeamId> visible_team) {
  ASSIGN_OR_RETURN(
      auto r,
      c.Exec("array_summary",
             "SELECT a.id, t.name, u.name, a.name, a.first_index, a.last_index, a.step,"
             " a.task_count, a.max_running, " FRUGAL_US("a.created_at") ","
             " (SELECT coalesce(json_object_agg(s.state, s.n), '{}')::text FROM (SELECT"
             "   j.state, count(*) AS n FROM jobs j WHERE j.array_id = a.id GROUP BY j.state) s),"
             " (SELECT coalesce(min(j.id), 0) FROM jobs j WHERE j.array_id = a.id),"
             " (SELECT coalesce(max(j.id), 0) FROM jobs j WHERE j.array_id = a.id),"
             " (SELECT coalesce(sum(" FRUGAL_ATTEMPT_COST "), 0)::bigint FROM attempts a"
             "   JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
             "   WHERE a.job_id IN (SELECT j.id FROM jobs j WHERE j.array_id = $1)),"
             " (SELECT coalesce(sum(" FRUGAL_ATTEMPT_LOST "), 0)::bigint FROM attempts a"
             "   WHERE a.job_id IN (SELECT j.id FROM jobs j WHERE j.array_id = $1))"
             " FROM job_arrays a JOIN teams t ON t.id = a.team_id JOIN users u ON u.id = a.user_id"
             " WHERE a.id = $1 AND ($2::bigint IS NULL OR a.team_id = $2)",
             {std::to_string(id), VisibleParam(visible_team)}));
  if (r.rows() == 0) return NotFound("array " + std::to_string(id) + " not found");
  ArraySummary s;
  s.id = r.Int(0, 0);
  s.team = r.Text(0, 1);
  s.user = r.Text(0, 2);
  s.name = r.Text(0, 3);
  s.first = static_cast<int>(r.Int(0, 4));
  s.last = static_cast<int>(r.Int(0, 5));
  s.step = static_cast<int>(r.Int(0, 6));
  s.task_count = static_cast<int>(r.Int(0, 7));
  if (auto v = r.OptInt(0, 8)) s.max_running = static_cast<int>(*v);
  s.created_at = pg::FromMicros(r.Int(0, 9));
  s.states = json::parse(r.Text(0, 10)).get<std::map<std::string, int>>();
  s.first_job = r.Int(0, 11);
  s.last_job = r.Int(0, 12);
  s.cost = r.Int(0, 13);
  s.lost = r.Int(0, 14);
  return s;
}

// The array's indices, first..last by step; InvalidArgument past the task limit.
StatusOr<std::vector<int>> Indices(const ArrayRequest& req) {
  if (req.first < 0 || req.last < req.first || req.step < 1)
    return InvalidArgument("array indices must be FIRST-LAST[:STEP] with 0 <= FIRST <= LAST and "
                           "STEP >= 1",
                           "array");
  const std::int64_t count = (static_cast<std::int64_t>(req.last) - req.first) / req.step + 1;
  if (count > kMaxArrayTasks)
    return InvalidArgument("an array has at most " + std::to_string(kMaxArrayTasks) +
                               " tasks; " + std::to_string(count) + " asked",
                           "array");
  std::vector<int> out;
  for (std::int64_t i = req.first; i <= req.last; i += req.step) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

StatusOr<ArrayResult> PgStore::SubmitArray(const Principal& who, const ArrayRequest& req) {
  ASSIGN_OR_RETURN(const std::vector<int> indices, Indices(req));
  std::vector<JobId> deps = req.task.spec.after;
  deps.insert(deps.end(), req.task.spec.after_any.begin(), req.task.spec.after_any.end());
  const bool admin = who.role == Role::kAdmin;
  const std::optional<model::TeamId> visible =
      admin ? std::nullopt : std::optional<model::TeamId>(who.team_id);
  return InTransaction<ArrayResult>(pool_, [&](PgConn& c) -> StatusOr<ArrayResult> {
    RETURN_IF_ERROR(pg::CheckDependencies(c, deps, who.team_id, admin));
    const auto& key = req.task.idempotency_key;
    ASSIGN_OR_RETURN(
        auto ins,
        c.Exec("array_insert",
               "INSERT INTO job_arrays (team_id, user_id, name, first_index, last_index, step,"
               " task_count, max_running, idempotency_key, request_sha256)"
               " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
               " ON CONFLICT (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL"
               " DO NOTHING RETURNING id",
               {std::to_string(who.team_id), std::to_string(who.user_id), req.task.spec.name,
                std::to_string(req.first), std::to_string(req.last), std::to_string(req.step),
                std::to_string(indices.size()),
                req.max_running ? PgParam(std::to_string(*req.max_running)) : std::nullopt, key,
                key ? PgParam(req.task.request_sha256) : std::nullopt}));
    if (ins.rows() == 0) {
      ASSIGN_OR_RETURN(auto prev, c.Exec("array_by_key",
                                         "SELECT id, request_sha256 FROM job_arrays WHERE"
                                         " team_id = $1 AND idempotency_key = $2",
                                         {std::to_string(who.team_id), key}));
      if (prev.rows() == 0) return Internal("idempotency key conflict without a row");
      if (prev.Text(0, 1) != req.task.request_sha256)
        return Conflict("Idempotency-Key '" + *key + "' was already used by array " +
                        prev.Text(0, 0) + " with a different request; use a new key");
      ASSIGN_OR_RETURN(auto earlier, LoadArray(c, prev.Int(0, 0), std::nullopt));
      return ArrayResult{std::move(earlier), false};
    }
    const std::int64_t id = ins.Int(0, 0);
    // Task i waits for task i of another array (a sweep over the same indices, stage 2).
    std::map<int, JobId> paired;
    if (req.after_array_index) {
      const std::string other = std::to_string(*req.after_array_index);
      ASSIGN_OR_RETURN(bool exists, ArrayVisible(c, *req.after_array_index, visible));
      if (!exists)
        return FailedPrecondition("array " + other + " does not exist", "after_array_index");
      ASSIGN_OR_RETURN(auto tasks, c.Exec("array_task_ids",
                                          "SELECT array_index, id FROM jobs WHERE array_id = $1",
                                          {other}));
      for (int i = 0; i < tasks.rows(); ++i)
        paired[static_cast<int>(tasks.Int(i, 0))] = tasks.Int(i, 1);
    }
    std::vector<SubmitRequest> reqs;
    reqs.reserve(indices.size());
    for (int index : indices) {
      SubmitRequest t = req.task;
      t.idempotency_key.reset();  // the array's key covers its tasks
      t.spec.env["FRUGAL_ARRAY_ID"] = std::to_string(id);
      t.spec.env["FRUGAL_ARRAY_INDEX"] = std::to_string(index);
      if (auto it = paired.find(index); it != paired.end()) t.spec.after.push_back(it->second);
      reqs.push_back(std::move(t));
    }
    RETURN_IF_ERROR(pg::InsertJobs(c, who, reqs, id, indices).status());
    if (req.max_running) {
      // Tasks past the limit are not in the engine's snapshot, so it does not word their
      // wait; say it here (the engine's own reason replaces this once a task is considered).
      RETURN_IF_ERROR(c.Exec("array_throttle_reason",
                             "UPDATE jobs SET reason = $2 WHERE array_id = $1 AND state = 'pending'",
                             {std::to_string(id), "waiting: array " + std::to_string(id) +
                                                      " runs at most " +
                                                      std::to_string(*req.max_running) +
                                                      " task(s) at once"})
                          .status());
    }
    ASSIGN_OR_RETURN(auto summary, LoadArray(c, id, std::nullopt));
    return ArrayResult{std::move(summary), true};
  });
}

StatusOr<ArraySummary> PgStore::GetArray(std::int64_t id,
                                         std::optional<model::TeamId> visible_team) {
  return InTransaction<ArraySummary>(
      pool_, [&](PgConn& c) -> StatusOr<ArraySummary> { return LoadArray(c, id, visible_team); });
}

StatusOr<int> PgStore::CancelArray(std::int64_t id, std::optional<model::TeamId> visible_team,
                                   const std::string& actor) {
  return InTransaction<int>(pool_, [&](PgConn& c) -> StatusOr<int> {
    ASSIGN_OR_RETURN(bool visible, ArrayVisible(c, id, visible_team));
    if (!visible) return NotFound("array " + std::to_string(id) + " not found");
    // As CancelJob, for every task that has not ended and was not already asked to stop:
    // waiting tasks end now, running ones are stopped by the engine.
    ASSIGN_OR_RETURN(
        auto r,
        c.Exec("cancel_array",
               // Rows locked in id order first (the engine locks jobs too), so the state
               // each event names is the one the row had when it was cancelled.
               "WITH old AS (SELECT id, state FROM jobs WHERE array_id = $1"
               " AND state IN ('pending', 'held', 'running') AND cancel_requested_at IS NULL"
               " ORDER BY id FOR UPDATE),"
               " upd AS (UPDATE jobs j SET cancel_requested_at = now(), updated_at = now(),"
               " state = CASE WHEN old.state = 'running' THEN old.state ELSE 'cancelled' END,"
               " finished_at = CASE WHEN old.state = 'running' THEN NULL ELSE now() END,"
               " reason = CASE WHEN old.state = 'running' THEN 'stopping: cancel requested'"
               " ELSE 'cancelled by ' || $2 END"
               " FROM old WHERE old.id = j.id"
               " RETURNING j.id, old.state AS from_state, j.state AS to_state),"
               " ev AS (INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
               " SELECT id, CASE WHEN to_state = 'cancelled' THEN 'state_changed'"
               " ELSE 'cancel_requested' END, from_state, to_state, 'cancelled by ' || $2"
               " FROM upd ORDER BY id)"
               " SELECT count(*) FROM upd",
               {std::to_string(id), actor}));
    return static_cast<int>(r.Int(0, 0));
  });
}

StatusOr<std::vector<JobId>> PgStore::ArrayTasks(const std::vector<std::int64_t>& arrays,
                                                 std::optional<model::TeamId> visible_team) {
  return InTransaction<std::vector<JobId>>(pool_, [&](PgConn& c) -> StatusOr<std::vector<JobId>> {
    std::vector<JobId> out;
    for (auto id : arrays) {
      // NULL: no such array (or another team's); else its tasks.
      ASSIGN_OR_RETURN(auto r, c.Exec("array_tasks",
                                      "SELECT (SELECT coalesce(json_agg(j.id ORDER BY j.id),"
                                      " '[]')::text FROM jobs j WHERE j.array_id = a.id)"
                                      " FROM job_arrays a WHERE a.id = $1"
                                      " AND ($2::bigint IS NULL OR a.team_id = $2)",
                                      {std::to_string(id), VisibleParam(visible_team)}));
      if (r.rows() == 0) return NotFound("array " + std::to_string(id) + " not found");
      for (JobId task : json::parse(r.Text(0, 0))) out.push_back(task);
    }
    return out;
  });
}

}  // namespace frugal::store
