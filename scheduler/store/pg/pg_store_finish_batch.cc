// A batch of finish reports in one pass (decision 0037): the common report (a live
// single-node attempt of this node, under its fence and epoch) costs a share of five
// statements for the whole batch instead of ten statements of its own.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>

#include "scheduler/model/lifecycle.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store::pg {

using nlohmann::json;

namespace {

// One report on the common path, as it goes through the statements below.
struct Common {
  std::size_t index = 0;  // in the batch
  model::JobId job_id = 0;
  std::string node;
  std::int64_t log_bytes = 0;
  bool idle_stopped = false;
};

}  // namespace

StatusOr<std::vector<bool>> FinishCommonReports(PgConn& c, const std::vector<FinishReport>& reports,
                                                std::int64_t log_cap_bytes, model::NodeId node,
                                                std::vector<FinishResult>& out) {
  std::vector<bool> done(reports.size(), false);
  // An attempt reported twice in one batch, and a log holding NUL (which jsonb cannot
  // carry), take the report-by-report path, which answers them as it always has.
  std::map<model::AttemptId, int> times;
  for (const auto& r : reports) ++times[r.attempt_id];
  json fence = json::array();
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const FinishReport& r = reports[i];
    if (times[r.attempt_id] > 1 || r.log.find('\0') != std::string::npos) continue;
    fence.push_back({{"i", i}, {"id", r.attempt_id}, {"epoch", r.lease_epoch}, {"fence", r.fence}});
  }
  if (fence.empty()) return done;
  // The attempts that pass CheckFence's test, locked in id order. (The reports left to the
  // other path lock theirs afterwards, in report order: a conflict with a sweep of the
  // same node can deadlock, which fails the batch, and the worker sends it again.)
  // A part of a multi-node gang, a late result or a refusal is left to the other path.
  ASSIGN_OR_RETURN(
      auto f, c.Exec("finish_common_fence",
                     "SELECT x.i, a.job_id, n.name, a.log_bytes, a.idle_stopped_at IS NOT NULL"
                     " FROM jsonb_to_recordset($1::jsonb) AS x(i int, id bigint, epoch bigint,"
                     " fence text) JOIN attempts a ON a.id = x.id JOIN nodes n ON"
                     " n.id = a.node_id WHERE a.node_id = $2 AND a.ended_at IS NULL"
                     " AND a.lease_epoch = x.epoch AND a.fence = x.fence AND a.gang_size = 1"
                     " ORDER BY a.id FOR UPDATE OF a",
                     {fence.dump(), std::to_string(node)}));
  if (f.rows() == 0) return done;
  std::vector<Common> common;
  std::string job_ids;
  for (int k = 0; k < f.rows(); ++k) {
    common.push_back({static_cast<std::size_t>(f.Int(k, 0)), f.Int(k, 1), f.Text(k, 2),
                      f.Int(k, 3), f.Bool(k, 4)});
    job_ids += (job_ids.empty() ? "" : ",") + std::to_string(common.back().job_id);
  }
  // Their jobs, locked in id order (after the attempts, as FinishInTx locks them). A job
  // that is not running is left to the other path, which refuses the report.
  ASSIGN_OR_RETURN(auto j, c.Exec("finish_common_jobs",
                                  "SELECT id, failures, max_attempts, cancel_requested_at IS NOT"
                                  " NULL, idle_requeues FROM jobs WHERE id = ANY($1::bigint[])"
                                  " AND state = 'running' ORDER BY id FOR UPDATE",
                                  {"{" + job_ids + "}"}));
  std::map<model::JobId, model::JobFacts> facts;
  for (int k = 0; k < j.rows(); ++k) {
    model::JobFacts jf;
    jf.failures = static_cast<int>(j.Int(k, 1));
    jf.max_attempts = static_cast<int>(j.Int(k, 2));
    jf.cancel_requested = j.Bool(k, 3);
    jf.idle_requeues = j.Int(k, 4);
    facts[j.Int(k, 0)] = jf;
  }
  json ends = json::array(), logs = json::array(), moves = json::array();
  std::string ended_ids, moved_ids;
  for (const Common& m : common) {
    const auto it = facts.find(m.job_id);
    if (it == facts.end()) continue;
    const FinishReport& r = reports[m.index];
    // As AppendLogInTx: past the cap, output is counted rather than kept.
    const auto size = static_cast<std::int64_t>(r.log.size());
    const bool keep = m.log_bytes + size <= log_cap_bytes;
    ends.push_back({{"id", r.attempt_id},
                    {"kept", keep ? size : 0},
                    {"dropped", keep ? 0 : size},
                    {"outcome", ToString(r.outcome)},
                    {"exit_code", r.exit_code ? json(*r.exit_code) : json()}});
    if (keep && !r.log.empty()) {
      logs.push_back({{"job", m.job_id}, {"id", r.attempt_id}, {"data", r.log}});
    }
    model::AttemptResult result;
    result.end = AttemptEndOf(r.outcome);
    result.exit_code = r.exit_code;
    result.node = m.node;
    result.idle_stopped = m.idle_stopped;
    const model::Transition next = model::AfterAttempt(it->second, result);
    moves.push_back({{"id", m.job_id},
                     {"state", model::ToString(next.to)},
                     {"reason", next.reason},
                     {"failures", next.failures},
                     {"backoff", next.backoff_seconds},
                     {"terminal", model::IsTerminal(next.to)}});
    done[m.index] = true;
    out[m.index].job_id = m.job_id;
    ended_ids += (ended_ids.empty() ? "" : ",") + std::to_string(r.attempt_id);
    moved_ids += (moved_ids.empty() ? "" : ",") + std::to_string(m.job_id);
  }
  if (ends.empty()) return done;
  // As FinishInTx, AppendLogInTx and BillAttempts together: each attempt is ended and
  // billed in one write of its row (decision 0052).
  // The three writes in one round trip (decision 0049): each needs only what was read above.
  static const std::string end_and_bill = EndAndBillSql(
      "UPDATE attempts a SET log_bytes = a.log_bytes + x.kept,"
      " log_dropped_bytes = a.log_dropped_bytes + x.dropped,"
      " ended_at = greatest(now(), a.started_at), end_reason = x.outcome,"
      " exit_code = x.exit_code, acked_at = coalesce(a.acked_at, now()), billed = true"
      " FROM jsonb_to_recordset($1::jsonb) AS x(id bigint, kept bigint,"
      " dropped bigint, outcome text, exit_code int) WHERE a.id = x.id"
      // The ids again as an array: the planner counts an array's elements but guesses
      // 100 rows for a recordset, and with that guess it scans the whole table once it
      // has a few thousand attempts, where the key finds the batch's few.
      " AND a.id = ANY($2::bigint[]) AND a.gang_size = 1 AND NOT a.billed");
  std::vector<PgStatement> writes = {
      {"finish_common_attempts", end_and_bill, {ends.dump(), "{" + ended_ids + "}"}},
      // As WriteTransition, for every job at once.
      {"finish_common_moves",
       "WITH x AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS x(id bigint,"
       " state text, reason text, failures int, backoff bigint, terminal bool)),"
       " moved AS (UPDATE jobs j SET state = x.state, reason = x.reason,"
       " failures = x.failures, not_before = CASE WHEN x.backoff > 0 THEN"
       " now() + make_interval(secs => x.backoff) ELSE NULL END,"
       " finished_at = CASE WHEN x.terminal THEN now() ELSE NULL END,"
       " updated_at = now() FROM x WHERE j.id = x.id"
       " AND j.id = ANY($2::bigint[]) RETURNING j.id)"
       " INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
       " SELECT x.id, 'state_changed', 'running', x.state, x.reason FROM x"
       " ORDER BY x.id",
       {moves.dump(), "{" + moved_ids + "}"}}};
  if (!logs.empty()) {
    writes.push_back({"finish_common_logs",
                      "INSERT INTO attempt_logs (job_id, attempt_id, data) SELECT x.job,"
                      " x.id, x.data FROM jsonb_to_recordset($1::jsonb) AS x(job bigint,"
                      " id bigint, data text)",
                      {logs.dump()}});
  }
  ASSIGN_OR_RETURN(auto written, c.ExecPipeline(writes));
  // Every attempt the fence read locked is ended and billed, or none is: a job must never
  // move on while its attempt stays live or unbilled. The error rolls the batch back.
  if (written[0].Int(0, 0) != static_cast<std::int64_t>(ends.size())) {
    return Internal("finish batch: " + std::to_string(written[0].Int(0, 0)) + " of " +
                    std::to_string(ends.size()) + " attempts ended and billed");
  }
  return done;
}

}  // namespace frugal::store::pg
