// Jobs: submit (idempotent), list, get, cancel.
#include <nlohmann/json.hpp>

#include <cassert>

#include "scheduler/model/lifecycle.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;
using model::Job;
using model::JobId;

namespace pg {

const char* const kJobColumns =
    "j.id, j.team_id, t.name, j.user_id, u.name, j.name, j.project, to_json(j.command)::text,"
    " j.env::text, j.working_dir, j.gpus, to_json(j.gpu_types)::text, j.min_gpu_mem_gb,"
    " j.priority, " FRUGAL_US("j.deadline") ", j.estimate_s, j.max_runtime_s, j.tolerance,"
    " j.checkpoint_interval_s, to_json(j.depends_on)::text, j.labels::text, j.max_attempts,"
    " j.state, j.reason, j.cancel_requested_at IS NOT NULL, j.attempt_count, "
    FRUGAL_US("j.created_at") ", " FRUGAL_US("j.updated_at") ", " FRUGAL_US("j.started_at")
    ", " FRUGAL_US("j.finished_at") ", to_json(j.depends_on_any)::text, j.array_id,"
    " j.array_index, j.nodes";

Timestamp FromMicros(std::int64_t us) { return Timestamp(std::chrono::microseconds(us)); }

std::optional<Timestamp> OptTime(const PgResult& r, int row, int col) {
  if (r.IsNull(row, col)) return std::nullopt;
  return FromMicros(r.Int(row, col));
}

std::string ToMicrosParam(Timestamp t) {
  return std::to_string(
      std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count());
}

std::string ToTimeParam(Timestamp t) {
  return FormatRfc3339(std::chrono::time_point_cast<std::chrono::microseconds>(t));
}

Job ParseJob(const PgResult& r, int i, int first) {
  Job j;
  int c = first;
  j.id = r.Int(i, c++);
  j.team_id = r.Int(i, c++);
  j.team = r.Text(i, c++);
  j.user_id = r.Int(i, c++);
  j.user = r.Text(i, c++);
  j.spec.name = r.Text(i, c++);
  j.spec.project = r.Text(i, c++);
  j.spec.command = json::parse(r.Text(i, c++)).get<std::vector<std::string>>();
  j.spec.env = json::parse(r.Text(i, c++)).get<std::map<std::string, std::string>>();
  j.spec.working_dir = r.Text(i, c++);
  j.spec.gpus = static_cast<int>(r.Int(i, c++));
  j.spec.gpu_types = json::parse(r.Text(i, c++)).get<std::vector<std::string>>();
  if (auto v = r.OptInt(i, c++)) j.spec.min_gpu_mem_gb = static_cast<int>(*v);
  j.spec.priority = r.Text(i, c++);
  j.spec.deadline = OptTime(r, i, c++);
  if (auto v = r.OptInt(i, c++)) j.spec.estimate = Seconds(*v);
  if (auto v = r.OptInt(i, c++)) j.spec.max_runtime = Seconds(*v);
  j.spec.tolerance = model::ParseTolerance(r.Text(i, c++)).value();
  if (auto v = r.OptInt(i, c++)) j.spec.checkpoint_interval = Seconds(*v);
  j.spec.after = json::parse(r.Text(i, c++)).get<std::vector<JobId>>();
  j.spec.labels = json::parse(r.Text(i, c++)).get<std::map<std::string, std::string>>();
  j.spec.max_attempts = static_cast<int>(r.Int(i, c++));
  j.state = model::ParseJobState(r.Text(i, c++)).value();
  j.reason = r.Text(i, c++);
  j.cancel_requested = r.Bool(i, c++);
  j.attempts = static_cast<int>(r.Int(i, c++));
  j.created_at = FromMicros(r.Int(i, c++));
  j.updated_at = FromMicros(r.Int(i, c++));
  j.started_at = OptTime(r, i, c++);
  j.finished_at = OptTime(r, i, c++);
  // depends_on holds both kinds; `after` is the must-succeed ones.
  j.spec.after_any = json::parse(r.Text(i, c++)).get<std::vector<JobId>>();
  j.array_id = r.OptInt(i, c++);
  if (auto v = r.OptInt(i, c++)) j.array_index = static_cast<int>(*v);
  j.spec.nodes = static_cast<int>(r.Int(i, c++));
  std::erase_if(j.spec.after, [&](JobId id) {
    return std::find(j.spec.after_any.begin(), j.spec.after_any.end(), id) !=
           j.spec.after_any.end();
  });
  assert(c - first == kJobColumnCount);
  return j;
}

}  // namespace pg

namespace pg {

std::optional<std::string> VisibleParam(std::optional<model::TeamId> team) {
  if (!team) return std::nullopt;
  return std::to_string(*team);
}

}  // namespace pg

namespace {

std::optional<std::string> OptParam(const std::optional<Seconds>& s) {
  if (!s) return std::nullopt;
  return std::to_string(s->count());
}


StatusOr<Job> LoadJob(PgConn& c, JobId id, std::optional<model::TeamId> visible_team) {
  ASSIGN_OR_RETURN(auto r, c.Exec("job_by_id",
                                  std::string("SELECT ") + pg::kJobColumns +
                                      " FROM jobs j JOIN teams t ON t.id = j.team_id"
                                      " JOIN users u ON u.id = j.user_id"
                                      " WHERE j.id = $1 AND ($2::bigint IS NULL OR j.team_id = $2)",
                                  {std::to_string(id), pg::VisibleParam(visible_team)}));
  if (r.rows() == 0) return NotFound("job " + std::to_string(id) + " not found");
  return pg::ParseJob(r, 0);
}

}  // namespace

namespace pg {

Status CheckDependencies(PgConn& c, const std::vector<JobId>& after, model::TeamId team,
                         bool admin) {
  if (after.empty()) return Status::Ok();
  std::string ids;
  for (auto id : after) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  ASSIGN_OR_RETURN(auto r, c.Exec("deps_visible",
                                  "SELECT coalesce(json_agg(x.id), '[]')::text FROM"
                                  " unnest($1::bigint[]) AS x(id) WHERE NOT EXISTS (SELECT 1 FROM"
                                  " jobs j WHERE j.id = x.id AND ($2::bigint IS NULL OR"
                                  " j.team_id = $2))",
                                  {"{" + ids + "}", admin ? std::nullopt : pg::VisibleParam(team)}));
  auto missing = json::parse(r.Text(0, 0));
  if (!missing.empty()) {
    return FailedPrecondition("dependency job(s) " + missing.dump() + " do not exist", "after");
  }
  return Status::Ok();
}

}  // namespace pg

StatusOr<SubmitResult> PgStore::Submit(const Principal& who, const SubmitRequest& req) {
  const model::JobSpec& s = req.spec;
  auto rank = model::PriorityRank(s.priority);
  if (!rank.ok()) return rank.status();
  // Outside a transaction (decision 0039): the job, its event and its read-back are one
  // statement, and what is read besides cannot change under it (jobs are never deleted, a
  // key's job never changes). A lost connection is not retried: the job may be stored.
  return Autocommit<SubmitResult>(pool_, Repeat::kNever, [&](PgConn& c) -> StatusOr<SubmitResult> {
    std::vector<JobId> deps = s.after;
    for (auto id : s.after_any)
      if (std::find(deps.begin(), deps.end(), id) == deps.end()) deps.push_back(id);
    RETURN_IF_ERROR(pg::CheckDependencies(c, deps, who.team_id, who.role == Role::kAdmin));
    std::vector<PgParam> p = {
        std::to_string(who.team_id),
        std::to_string(who.user_id),
        s.name,
        s.project,
        json(s.command).dump(),
        json(s.env).dump(),
        s.working_dir,
        std::to_string(s.gpus),
        json(s.gpu_types).dump(),
        s.min_gpu_mem_gb ? PgParam(std::to_string(*s.min_gpu_mem_gb)) : std::nullopt,
        s.priority,
        std::to_string(*rank),
        s.deadline ? PgParam(pg::ToMicrosParam(*s.deadline)) : std::nullopt,
        OptParam(s.estimate),
        OptParam(s.max_runtime),
        model::ToString(s.tolerance),
        OptParam(s.checkpoint_interval),
        json(deps).dump(),
        json(s.labels).dump(),
        std::to_string(s.max_attempts),
        req.idempotency_key,
        req.idempotency_key ? PgParam(req.request_sha256) : std::nullopt,
        json(s.after_any).dump(),
        req.approval_reason,
        std::to_string(s.nodes),
        "submitted by " + who.user + (req.approval_reason ? "; " + *req.approval_reason : ""),
    };
    ASSIGN_OR_RETURN(
        auto ins,
        c.Exec("submit_job",
               "WITH j AS (INSERT INTO jobs (team_id, user_id, name, project, command, env,"
               " working_dir, gpus, gpu_types, min_gpu_mem_gb, priority, priority_rank, deadline,"
               " estimate_s, max_runtime_s, tolerance, checkpoint_interval_s, depends_on, labels,"
               " max_attempts, idempotency_key, request_sha256, depends_on_any, state, reason,"
               " awaiting_approval, nodes) VALUES ($1, $2,"
               " $3, $4,"
               " ARRAY(SELECT jsonb_array_elements_text($5::jsonb)), $6::jsonb, $7, $8,"
               " ARRAY(SELECT jsonb_array_elements_text($9::jsonb)), $10, $11, $12,"
               " to_timestamp($13::bigint / 1000000.0), $14, $15, $16, $17,"
               " ARRAY(SELECT jsonb_array_elements_text($18::jsonb)::bigint), $19::jsonb, $20,"
               " $21, $22, ARRAY(SELECT jsonb_array_elements_text($23::jsonb)::bigint),"
               " CASE WHEN $24::text IS NULL THEN 'pending' ELSE 'held' END, coalesce($24, ''),"
               " $24::text IS NOT NULL, $25)"
               " ON CONFLICT (team_id, idempotency_key) WHERE idempotency_key IS NOT NULL"
               " DO NOTHING RETURNING *),"
               " e AS (INSERT INTO job_events (job_id, kind, to_state, message)"
               " SELECT id, 'submitted', state, $26 FROM j)"
               " SELECT " + std::string(pg::kJobColumns) +
               " FROM j JOIN teams t ON t.id = j.team_id JOIN users u ON u.id = j.user_id",
               p));
    SubmitResult result;
    if (ins.rows() == 1) {
      result.created = true;
      result.job = pg::ParseJob(ins, 0);
      return result;
    }
    // A retry: the key's job, if it was stored for the same request.
    ASSIGN_OR_RETURN(auto prev, c.Exec("job_by_idempotency_key",
                                       "SELECT id, request_sha256 FROM jobs WHERE team_id = $1"
                                       " AND idempotency_key = $2",
                                       {std::to_string(who.team_id), req.idempotency_key}));
    if (prev.rows() == 0) return Internal("idempotency key conflict without a row");
    if (prev.Text(0, 1) != req.request_sha256) {
      return Conflict("Idempotency-Key '" + *req.idempotency_key + "' was already used by job " +
                      prev.Text(0, 0) + " with a different request; use a new key");
    }
    ASSIGN_OR_RETURN(result.job, LoadJob(c, prev.Int(0, 0), std::nullopt));
    return result;
  });
}

StatusOr<JobPage> PgStore::ListJobs(const JobFilter& f) {
  return InTransaction<JobPage>(pool_, [&](PgConn& c) -> StatusOr<JobPage> {
    std::optional<std::string> label;
    if (f.label) label = json{{f.label->first, f.label->second}}.dump();
    ASSIGN_OR_RETURN(
        auto r,
        c.Exec("list_jobs",
               std::string("SELECT ") + pg::kJobColumns +
                   " FROM jobs j JOIN teams t ON t.id = j.team_id JOIN users u ON u.id = j.user_id"
                   " WHERE ($1::text IS NULL OR j.state = $1)"
                   " AND ($2::bigint IS NULL OR j.team_id = $2)"
                   " AND ($3::text IS NULL OR t.name = $3)"
                   " AND ($4::text IS NULL OR u.name = $4)"
                   " AND ($5::jsonb IS NULL OR j.labels @> $5::jsonb)"
                   " AND ($6::bigint IS NULL OR j.id < $6)"
                   " AND ($8::bigint IS NULL OR j.array_id = $8)"
                   " ORDER BY j.id DESC LIMIT $7",
               {f.state ? PgParam(model::ToString(*f.state)) : std::nullopt,
                pg::VisibleParam(f.visible_team), f.team, f.user, label,
                f.before ? PgParam(std::to_string(*f.before)) : std::nullopt,
                std::to_string(f.limit + 1),
                f.array ? PgParam(std::to_string(*f.array)) : std::nullopt}));
    JobPage page;
    for (int i = 0; i < r.rows() && i < f.limit; ++i) page.jobs.push_back(pg::ParseJob(r, i));
    if (r.rows() > f.limit && !page.jobs.empty()) page.next_cursor = page.jobs.back().id;
    return page;
  });
}

StatusOr<QueuePosition> PgStore::PendingAhead(JobId id) {
  return Autocommit<QueuePosition>(pool_, Repeat::kReads, [&](PgConn& c) -> StatusOr<QueuePosition> {
    // One pass over the pending jobs (a partial index holds them), not a snapshot of them.
    ASSIGN_OR_RETURN(auto r, c.Exec("pending_ahead",
                                    "SELECT count(*) FILTER (WHERE p.priority_rank < j.priority_rank),"
                                    " count(*) FILTER (WHERE p.priority_rank = j.priority_rank"
                                    " AND p.id <> j.id)"
                                    " FROM jobs j JOIN jobs p ON p.state = 'pending'"
                                    " WHERE j.id = $1 AND j.state = 'pending' GROUP BY j.id",
                                    {std::to_string(id)}));
    if (r.rows() == 0) return NotFound("job " + std::to_string(id) + " is not pending");
    return QueuePosition{static_cast<int>(r.Int(0, 0)), static_cast<int>(r.Int(0, 1))};
  });
}

StatusOr<JobDetail> PgStore::GetJob(JobId id, std::optional<model::TeamId> visible_team) {
  return InTransaction<JobDetail>(pool_, [&](PgConn& c) -> StatusOr<JobDetail> {
    JobDetail d;
    ASSIGN_OR_RETURN(d.job, LoadJob(c, id, visible_team));
    const std::string sid = std::to_string(id);
    ASSIGN_OR_RETURN(auto a, c.Exec("job_attempts",
                                    "SELECT a.id, a.number, a.node_id, n.name, p.name, a.gpus,"
                                    " a.lease_epoch, " FRUGAL_US("a.started_at") ", "
                                    FRUGAL_US("a.ended_at") ", coalesce(a.end_reason, ''),"
                                    " a.exit_code, a.peak_gpu_mem_mb,"
                                    " coalesce(" FRUGAL_STOP_KIND("a") ", ''), a.rank"
                                    " FROM attempts a JOIN nodes n"
                                    " ON n.id = a.node_id"
                                    " JOIN pools p ON p.id = n.pool_id WHERE a.job_id = $1"
                                    " ORDER BY a.number, a.rank",
                                    {sid}));
    for (int i = 0; i < a.rows(); ++i) {
      model::Attempt at;
      at.id = a.Int(i, 0);
      at.job_id = id;
      at.number = static_cast<int>(a.Int(i, 1));
      at.node_id = a.Int(i, 2);
      at.node = a.Text(i, 3);
      at.pool = a.Text(i, 4);
      at.gpus = static_cast<int>(a.Int(i, 5));
      at.lease_epoch = a.Int(i, 6);
      at.started_at = pg::FromMicros(a.Int(i, 7));
      at.ended_at = pg::OptTime(a, i, 8);
      at.end_reason = a.Text(i, 9);
      if (auto v = a.OptInt(i, 10)) at.exit_code = static_cast<int>(*v);
      if (auto v = a.OptInt(i, 11)) at.peak_gpu_mem_mb = static_cast<int>(*v);
      at.stop_kind = a.Text(i, 12);
      at.rank = static_cast<int>(a.Int(i, 13));
      d.attempts.push_back(at);
    }
    ASSIGN_OR_RETURN(auto ck, c.Exec("job_latest_checkpoint",
                                     "SELECT id, attempt_id, step, progress, uri, size_bytes, "
                                     FRUGAL_US("created_at") " FROM checkpoints WHERE job_id = $1"
                                     " ORDER BY step DESC LIMIT 1",
                                     {sid}));
    if (ck.rows() == 1) {
      model::Checkpoint cp;
      cp.id = ck.Int(0, 0);
      cp.job_id = id;
      cp.attempt_id = ck.Int(0, 1);
      cp.step = ck.Int(0, 2);
      cp.progress = ck.Double(0, 3);
      cp.uri = ck.Text(0, 4);
      cp.size_bytes = ck.Int(0, 5);
      cp.created_at = pg::FromMicros(ck.Int(0, 6));
      d.latest_checkpoint = cp;
    }
    ASSIGN_OR_RETURN(auto ev, c.Exec("job_events",
                                     "SELECT id, " FRUGAL_US("at") ", kind, from_state, to_state,"
                                     " message FROM job_events WHERE job_id = $1 ORDER BY id"
                                     " LIMIT 1000",
                                     {sid}));
    for (int i = 0; i < ev.rows(); ++i) {
      d.events.push_back({ev.Int(i, 0), id, pg::FromMicros(ev.Int(i, 1)), ev.Text(i, 2),
                          ev.Text(i, 3), ev.Text(i, 4), ev.Text(i, 5)});
    }
    return d;
  });
}

StatusOr<Job> PgStore::CancelJob(JobId id, std::optional<model::TeamId> visible_team,
                                 const std::string& actor) {
  return InTransaction<Job>(pool_, [&](PgConn& c) -> StatusOr<Job> {
    // The row is locked first, so the state decided on is the state written over (an
    // assignment committed meanwhile is seen: the job is then cancelled as running).
    RETURN_IF_ERROR(c.Exec("cancel_lock", "SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE",
                           {std::to_string(id)})
                        .status());
    ASSIGN_OR_RETURN(Job before, LoadJob(c, id, visible_team));
    ASSIGN_OR_RETURN(model::CancelStep step, model::OnCancel(id, before.state, actor));
    if (before.cancel_requested) return before;  // cancelling twice is not an error
    const std::string to = model::ToString(step.to);
    RETURN_IF_ERROR(c.Exec("cancel_job",
                           "UPDATE jobs SET cancel_requested_at = now(), updated_at = now(),"
                           " state = $2, reason = $3,"
                           " finished_at = CASE WHEN $4::bool THEN now() ELSE NULL END"
                           " WHERE id = $1",
                           {std::to_string(id), to, step.reason, step.ends_now ? "true" : "false"})
                        .status());
    RETURN_IF_ERROR(c.Exec("cancel_event",
                           "INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
                           " VALUES ($1, $2, $3, $4, $5)",
                           {std::to_string(id), step.ends_now ? "state_changed" : "cancel_requested",
                            model::ToString(before.state), to, "cancelled by " + actor})
                        .status());
    return LoadJob(c, id, std::nullopt);
  });
}

}  // namespace frugal::store
