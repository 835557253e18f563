// Guardrails (migrations/0012_add_guardrails.sql): settings, team idle policies, approval of
// held jobs, and the engine's idle reclamation (whose idle attempts come with the cycle's
// snapshot, pg_store_engine.cc). The decisions are policy/guardrails.h's; this file only
// reads and writes, in database time.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

namespace {

// One statement, so that it reads one snapshot outside a transaction too.
StatusOr<model::GuardrailSettings> ReadSettings(PgConn& c) {
  ASSIGN_OR_RETURN(auto r, c.Exec("guardrails_read",
                                  "SELECT array_to_json(g.premium_gpu_types), g.approval_above_gpus,"
                                  " g.idle_threshold_percent, g.idle_window_s,"
                                  " (SELECT coalesce(json_agg(json_build_array(priority,"
                                  " default_max_runtime_s, max_max_runtime_s, min_run_time_s)"
                                  " ORDER BY priority), '[]') FROM priority_class_runtimes)::text"
                                  " FROM (SELECT 1) one LEFT JOIN guardrail_settings g ON true"));
  model::GuardrailSettings s;
  if (!r.IsNull(0, 0)) {
    s.premium_gpu_types = json::parse(r.Text(0, 0)).get<std::vector<std::string>>();
    s.approval_above_gpus = static_cast<int>(r.Int(0, 1));
    s.idle_threshold_percent = static_cast<int>(r.Int(0, 2));
    s.idle_window = Seconds(r.Int(0, 3));
  }
  for (const json& row : json::parse(r.Text(0, 4))) {
    model::ClassRuntime cr;
    if (!row[1].is_null()) cr.default_max_runtime = Seconds(row[1].get<std::int64_t>());
    if (!row[2].is_null()) cr.max_max_runtime = Seconds(row[2].get<std::int64_t>());
    if (!row[3].is_null()) cr.min_run_time = Seconds(row[3].get<std::int64_t>());
    s.runtimes[row[0].get<std::string>()] = cr;
  }
  return s;
}

// The audit's view of the settings (decision 0011).
json SettingsJson(const model::GuardrailSettings& s) {
  json runtimes = json::object();
  for (const auto& [cls, rt] : s.runtimes) {
    runtimes[cls] = {
        {"default_max_runtime_seconds",
         rt.default_max_runtime ? json(rt.default_max_runtime->count()) : json(nullptr)},
        {"max_max_runtime_seconds",
         rt.max_max_runtime ? json(rt.max_max_runtime->count()) : json(nullptr)},
        {"min_run_time_seconds", rt.min_run_time ? json(rt.min_run_time->count()) : json(nullptr)}};
  }
  return {{"premium_gpu_types", s.premium_gpu_types},
          {"approval_above_gpus", s.approval_above_gpus},
          {"idle_threshold_percent", s.idle_threshold_percent},
          {"idle_window_seconds", s.idle_window.count()},
          {"runtimes", runtimes}};
}

PgParam OptSeconds(const std::optional<Seconds>& s) {
  return s ? PgParam(std::to_string(s->count())) : std::nullopt;
}

}  // namespace

StatusOr<model::GuardrailSettings> PgStore::GetGuardrails() {
  return Autocommit<model::GuardrailSettings>(pool_, Repeat::kReads, ReadSettings);
}

namespace pg {

StatusOr<ConfigChange> SetGuardrailsTx(PgConn& c, const Principal& actor,
                                       const model::GuardrailSettings& s) {
  ASSIGN_OR_RETURN(auto old, ReadSettings(c));
  RETURN_IF_ERROR(c.Exec("guardrails_write",
                         "INSERT INTO guardrail_settings (id, premium_gpu_types,"
                         " approval_above_gpus, idle_threshold_percent, idle_window_s)"
                         " VALUES (true, ARRAY(SELECT jsonb_array_elements_text($1::jsonb)),"
                         " $2, $3, $4) ON CONFLICT (id) DO UPDATE SET premium_gpu_types ="
                         " EXCLUDED.premium_gpu_types, approval_above_gpus ="
                         " EXCLUDED.approval_above_gpus, idle_threshold_percent ="
                         " EXCLUDED.idle_threshold_percent, idle_window_s ="
                         " EXCLUDED.idle_window_s",
                         {json(s.premium_gpu_types).dump(), std::to_string(s.approval_above_gpus),
                          std::to_string(s.idle_threshold_percent),
                          std::to_string(s.idle_window.count())})
                      .status());
  RETURN_IF_ERROR(
      c.Exec("guardrails_runtimes_clear", "DELETE FROM priority_class_runtimes").status());
  for (const auto& [cls, rt] : s.runtimes) {
    RETURN_IF_ERROR(c.Exec("guardrails_runtime_insert",
                           "INSERT INTO priority_class_runtimes (priority,"
                           " default_max_runtime_s, max_max_runtime_s, min_run_time_s)"
                           " VALUES ($1, $2, $3, $4)",
                           {cls, OptSeconds(rt.default_max_runtime),
                            OptSeconds(rt.max_max_runtime), OptSeconds(rt.min_run_time)})
                        .status());
  }
  ASSIGN_OR_RETURN(auto saved, ReadSettings(c));
  const json before = SettingsJson(old), after = SettingsJson(saved);
  // The settings always exist (defaults until first set): a change is an update.
  ConfigChange change{before == after ? ConfigChange::Kind::kUnchanged
                                      : ConfigChange::Kind::kUpdated,
                      "guardrails", before.dump(), after.dump()};
  if (before != after)
    RETURN_IF_ERROR(pg::AppendAudit(c, actor, "guardrails.set", "guardrails", before, after));
  return change;
}

StatusOr<ConfigChange> SetTeamIdlePolicyTx(PgConn& c, const Principal& actor,
                                           const std::string& team, model::IdlePolicy policy) {
  ASSIGN_OR_RETURN(auto old, c.Exec("team_idle_policy_before",
                                    "SELECT idle_policy FROM teams WHERE name = $1 FOR UPDATE",
                                    {team}));
  if (old.rows() == 0) return NotFound("team '" + team + "' does not exist");
  const std::string before = old.Text(0, 0), after = model::ToString(policy);
  ConfigChange change{ConfigChange::Kind::kUnchanged, "idle_policy/" + team,
                      json{{"idle_policy", before}}.dump(), json{{"idle_policy", after}}.dump()};
  if (before == after) return change;
  change.kind = ConfigChange::Kind::kUpdated;
  RETURN_IF_ERROR(c.Exec("team_idle_policy_set", "UPDATE teams SET idle_policy = $2 WHERE name = $1",
                         {team, after})
                      .status());
  RETURN_IF_ERROR(pg::AppendAudit(c, actor, "team.idle_policy", "team/" + team,
                                  {{"idle_policy", before}}, {{"idle_policy", after}}));
  return change;
}

}  // namespace pg

StatusOr<model::GuardrailSettings> PgStore::SetGuardrails(const Principal& actor,
                                                          const model::GuardrailSettings& s) {
  return InTransaction<model::GuardrailSettings>(
      pool_, [&](PgConn& c) -> StatusOr<model::GuardrailSettings> {
        RETURN_IF_ERROR(pg::SetGuardrailsTx(c, actor, s).status());
        return ReadSettings(c);
      });
}

StatusOr<model::IdlePolicy> PgStore::GetTeamIdlePolicy(const std::string& team) {
  return InTransaction<model::IdlePolicy>(pool_, [&](PgConn& c) -> StatusOr<model::IdlePolicy> {
    ASSIGN_OR_RETURN(auto r, c.Exec("team_idle_policy_get",
                                    "SELECT idle_policy FROM teams WHERE name = $1", {team}));
    if (r.rows() == 0) return NotFound("team '" + team + "' does not exist");
    return model::ParseIdlePolicy(r.Text(0, 0));
  });
}

StatusOr<model::IdlePolicy> PgStore::SetTeamIdlePolicy(const Principal& actor,
                                                       const std::string& team,
                                                       model::IdlePolicy policy) {
  return InTransaction<model::IdlePolicy>(pool_, [&](PgConn& c) -> StatusOr<model::IdlePolicy> {
    RETURN_IF_ERROR(pg::SetTeamIdlePolicyTx(c, actor, team, policy).status());
    return policy;
  });
}

StatusOr<model::Job> PgStore::ApproveJob(const Principal& actor, model::JobId id) {
  return InTransaction<model::Job>(pool_, [&](PgConn& c) -> StatusOr<model::Job> {
    ASSIGN_OR_RETURN(auto j, c.Exec("approve_job_state",
                                    "SELECT state, awaiting_approval FROM jobs WHERE id = $1"
                                    " FOR UPDATE",
                                    {std::to_string(id)}));
    if (j.rows() == 0) return NotFound("job " + std::to_string(id) + " not found");
    if (j.Text(0, 0) != "held" || !j.Bool(0, 1)) {
      return Conflict("job " + std::to_string(id) + " is not awaiting approval (state " +
                      j.Text(0, 0) + ")");
    }
    const std::string reason = "approved by " + actor.user + "; waiting to be placed";
    RETURN_IF_ERROR(c.Exec("approve_job",
                           "UPDATE jobs SET state = 'pending', awaiting_approval = false,"
                           " reason = $2, updated_at = now() WHERE id = $1",
                           {std::to_string(id), reason})
                        .status());
    RETURN_IF_ERROR(c.Exec("approve_event",
                           "INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
                           " VALUES ($1, 'approved', 'held', 'pending', $2)",
                           {std::to_string(id), reason})
                        .status());
    RETURN_IF_ERROR(pg::AppendAudit(c, actor, "job.approve", "job/" + std::to_string(id),
                                    {{"state", "held"}, {"awaiting_approval", true}},
                                    {{"state", "pending"}, {"awaiting_approval", false}}));
    ASSIGN_OR_RETURN(auto job, c.Exec("job_by_id_plain",
                                      std::string("SELECT ") + pg::kJobColumns +
                                          " FROM jobs j JOIN teams t ON t.id = j.team_id"
                                          " JOIN users u ON u.id = j.user_id WHERE j.id = $1",
                                      {std::to_string(id)}));
    return pg::ParseJob(job, 0);
  });
}

namespace pg {

StatusOr<int> ApplyIdleActions(PgConn& c, const std::vector<model::IdleAction>& actions) {
  int stops = 0;
  for (const auto& a : actions) {
    const std::string attempt = std::to_string(a.attempt_id);
    if (a.warn) {
      // Once per attempt: the guard on idle_warned_at makes a repeat a no-op.
      RETURN_IF_ERROR(c.Exec("idle_warn",
                             "WITH w AS (UPDATE attempts SET idle_warned_at = now() WHERE"
                             " id = $1 AND ended_at IS NULL AND idle_warned_at IS NULL"
                             " RETURNING job_id) INSERT INTO job_events (job_id, kind,"
                             " message) SELECT job_id, 'idle_warning', $2 FROM w",
                             {attempt, a.message})
                          .status());
    }
    if (a.stop == model::IdleStep::kNone) continue;
    // A requeue is a preemption the worker signals (SIGTERM, grace to checkpoint); a job
    // with nothing to resume from is stopped as cancelled instead.
    const char* reason = a.stop == model::IdleStep::kRequeue ? "preempted" : "cancelled";
    ASSIGN_OR_RETURN(auto r, c.Exec("idle_stop",
                                    "WITH st AS (UPDATE attempts SET stop_reason = $2,"
                                    " idle_stopped_at = now() WHERE id = $1 AND ended_at IS NULL"
                                    " AND stop_reason IS NULL RETURNING job_id),"
                                    " j AS (UPDATE jobs SET reason = $3, updated_at = now(),"
                                    " idle_requeues = idle_requeues + ($2 = 'preempted')::int"
                                    " FROM st WHERE jobs.id = st.job_id)"
                                    " INSERT INTO job_events (job_id, kind, message)"
                                    " SELECT job_id, 'stop_ordered', 'idle: ' || $3 FROM st"
                                    " RETURNING job_id",
                                    {attempt, reason, a.message}));
    stops += r.rows();
  }
  return stops;
}

}  // namespace pg

StatusOr<std::vector<model::JobUsage>> PgStore::EndedJobUsage(const CostQuery& q) {
  return InTransaction<std::vector<model::JobUsage>>(
      pool_, [&](PgConn& c) -> StatusOr<std::vector<model::JobUsage>> {
        // Run time in whole milliseconds, truncated as the job detail's (C++) is, so the two
        // views of one job's advice agree to the micro-dollar.
        // Ended jobs with a measured peak, the latest 1000 in the window: advice is for
        // reading, and a report must stay cheap however long the history.
        ASSIGN_OR_RETURN(
            auto r, c.Exec("ended_job_usage",
                           "WITH js AS (SELECT j.id, j.tolerance FROM jobs j WHERE"
                           " j.finished_at IS NOT NULL AND ($1::timestamptz IS NULL OR"
                           " j.finished_at >= $1) AND ($2::timestamptz IS NULL OR"
                           " j.finished_at <= $2) AND ($3::bigint IS NULL OR j.team_id = $3)"
                           " AND EXISTS (SELECT 1 FROM attempts x WHERE x.job_id = j.id AND"
                           " x.peak_gpu_mem_mb IS NOT NULL) ORDER BY j.finished_at DESC, j.id"
                           " DESC LIMIT 1000)"
                           " SELECT js.id, js.tolerance, p.name, a.gpus, floor(extract(epoch from"
                           " (a.ended_at - a.started_at)) * 1000)::bigint, a.peak_gpu_mem_mb"
                           " FROM js JOIN attempts a ON a.job_id = js.id JOIN nodes n ON"
                           " n.id = a.node_id JOIN pools p ON p.id = n.pool_id WHERE"
                           " a.ended_at IS NOT NULL ORDER BY js.id, a.number",
                           {q.from ? PgParam(pg::ToTimeParam(*q.from)) : PgParam(),
                            q.to ? PgParam(pg::ToTimeParam(*q.to)) : PgParam(),
                            q.team ? PgParam(std::to_string(*q.team)) : PgParam()}));
        std::vector<model::JobUsage> out;
        for (int i = 0; i < r.rows(); ++i) {
          if (out.empty() || out.back().job_id != r.Int(i, 0)) {
            model::JobUsage u;
            u.job_id = r.Int(i, 0);
            auto tol = model::ParseTolerance(r.Text(i, 1));
            u.tolerance = tol.ok() ? *tol : model::Tolerance::kNone;
            out.push_back(std::move(u));
          }
          model::UsageRun run{r.Text(i, 2), static_cast<int>(r.Int(i, 3)), r.Int(i, 4), {}};
          if (auto v = r.OptInt(i, 5)) run.peak_gpu_mem_mb = static_cast<int>(*v);
          out.back().runs.push_back(std::move(run));
        }
        return out;
      });
}

}  // namespace frugal::store
