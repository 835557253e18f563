// The worker protocol's writes, each fenced by lease epoch (docs/worker-protocol.md).
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>

#include "common/crypto.h"

#include "scheduler/model/lifecycle.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

namespace {

// Ends every active attempt of the nodes in the `lost` CTE (id, name, notice_at,
// below_epoch) whose lease epoch is below `below_epoch`, in one statement. A node that had
// a preemption notice and then vanished was reclaimed: its attempts end `preempted` (the
// worker did not get to report in time), others `node_lost`. Their jobs then move through
// SettleJob, as a worker's report moves them (model/lifecycle.h): a single-node job at
// once, a multi-node gang once no part is live (decision 0032; its live peers are stopped
// through their heartbeats).
constexpr const char* kEndLostAttempts =
    " ended AS (UPDATE attempts a SET ended_at = greatest(now(), a.started_at),"
    "   noticed_at = coalesce(a.noticed_at, lost.notice_at),"
    "   end_reason = CASE WHEN lost.notice_at IS NULL THEN 'node_lost' ELSE 'preempted' END"
    "   FROM lost WHERE a.node_id = lost.id AND a.ended_at IS NULL"
    "   AND a.lease_epoch < lost.below_epoch"
    "   RETURNING a.id, a.job_id, lost.name)";

// The jobs whose attempts `ended` ended: "id,id,..." (empty: none), in id order.
constexpr const char* kEndedJobs =
    "coalesce((SELECT string_agg(DISTINCT e.job_id::text, ',') FROM ended e), '')";
// The attempts `ended` ended: "id,id,..." (empty: none).
constexpr const char* kEndedAttempts =
    "coalesce((SELECT string_agg(e.id::text, ',') FROM ended e), '')";

// "id,id,..." as ids (empty: none).
std::vector<std::int64_t> ParseIds(const std::string& ids) {
  std::vector<model::AttemptId> out;
  std::stringstream list(ids);
  std::string id;
  while (std::getline(list, id, ',')) out.push_back(std::stoll(id));
  return out;
}

// Settles the jobs "id,id,..." in ascending id order: every transaction that locks several
// jobs' rows (a sweep, a batch of finish reports) takes them in that one order, so two
// never wait on each other in a cycle.
Status SettleJobs(PgConn& c, const std::string& ids) {
  std::vector<std::int64_t> sorted = ParseIds(ids);
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  for (auto j : sorted) RETURN_IF_ERROR(pg::SettleJob(c, std::to_string(j)).status());
  return Status::Ok();
}

StatusOr<int> EndLostAttempts(PgConn& c, const std::string& name, const std::string& lost_cte,
                              const std::vector<PgParam>& params) {
  ASSIGN_OR_RETURN(auto r, c.Exec(name, "WITH " + lost_cte + "," + kEndLostAttempts +
                                            " SELECT count(*), " + kEndedJobs + ", " +
                                            kEndedAttempts + " FROM ended",
                                  params));
  RETURN_IF_ERROR(SettleJobs(c, r.Text(0, 1)));
  RETURN_IF_ERROR(pg::BillAttempts(c, ParseIds(r.Text(0, 2))).status());
  return static_cast<int>(r.Int(0, 0));
}

// As EndLostAttempts, but tells which node ended which attempts: one row per node of the
// `lost` CTE, with its attempts and their jobs as "attempt:job" pairs (for the node_lost
// log line and the node routes).
StatusOr<std::vector<LostNode>> EndLostAttemptsByNode(PgConn& c, const std::string& name,
                                                      const std::string& lost_cte,
                                                      const std::vector<PgParam>& params) {
  ASSIGN_OR_RETURN(auto r, c.Exec(name, "WITH " + lost_cte + "," + kEndLostAttempts +
                                            " SELECT l.name, coalesce((SELECT string_agg("
                                            "e.id::text || ':' || e.job_id::text, ',' ORDER BY"
                                            " e.id) FROM ended e WHERE e.name = l.name), ''), " +
                                            kEndedJobs + " FROM lost l ORDER BY l.name",
                                  params));
  if (r.rows() > 0) RETURN_IF_ERROR(SettleJobs(c, r.Text(0, 2)));
  std::vector<LostNode> out;
  std::vector<model::AttemptId> ended;
  for (int i = 0; i < r.rows(); ++i) {
    LostNode n;
    n.name = r.Text(i, 0);
    std::stringstream pairs(r.Text(i, 1));
    std::string pair;
    while (std::getline(pairs, pair, ',')) {
      const auto colon = pair.find(':');
      n.attempts.push_back(std::stoll(pair.substr(0, colon)));
      n.jobs.push_back(std::stoll(pair.substr(colon + 1)));
    }
    ended.insert(ended.end(), n.attempts.begin(), n.attempts.end());
    out.push_back(std::move(n));
  }
  RETURN_IF_ERROR(pg::BillAttempts(c, ended).status());
  return out;
}

// The `below_epoch` of a node whose every attempt is lost.
constexpr const char* kAllEpochs = "9223372036854775807::bigint AS below_epoch";

// The fence check every attempt report starts with (protocol/worker_protocol.h): locks the
// attempt and tells whether it is on the caller's node and current under this fence.
struct Fenced {
  std::string job_id;
  std::string node;          // the node's name
  std::int64_t log_bytes = 0;
  bool idle_stopped = false;
  std::optional<std::int64_t> latest_step;  // the job's latest committed checkpoint
  int rank = 0;       // a gang's part: its rank (decision 0032)
  int gang_size = 1;  // > 1: a part of a multi-node gang
};

StatusOr<Fenced> CheckFence(PgConn& c, model::AttemptId attempt, std::int64_t lease_epoch,
                            const AttemptAuth& auth) {
  ASSIGN_OR_RETURN(
      auto r, c.Exec("attempt_fence",
                     "SELECT a.job_id, a.node_id = $3, a.ended_at IS NULL AND a.lease_epoch = $2"
                     " AND a.fence = $4, n.name, a.log_bytes, a.idle_stopped_at IS NOT NULL,"
                     " (SELECT max(step) FROM checkpoints k WHERE k.job_id = a.job_id),"
                     " a.rank, a.gang_size"
                     " FROM attempts a JOIN nodes n ON n.id = a.node_id WHERE a.id = $1"
                     " FOR UPDATE OF a",
                     {std::to_string(attempt), std::to_string(lease_epoch),
                      std::to_string(auth.node_id), auth.fence}));
  const std::string what = "attempt " + std::to_string(attempt);
  if (r.rows() == 0 || !r.Bool(0, 1)) {
    // Not revealing whether it exists elsewhere: another node's attempts are not ours to see.
    return Status(StatusCode::kPermissionDenied, what + " is not on this node");
  }
  if (!r.Bool(0, 2)) {
    return Conflict(what + " is not active on this lease with this fence; the report was ignored");
  }
  return Fenced{r.Text(0, 0), r.Text(0, 3), r.Int(0, 4), r.Bool(0, 5), r.OptInt(0, 6),
                static_cast<int>(r.Int(0, 7)), static_cast<int>(r.Int(0, 8))};
}

Status MarkAcknowledged(PgConn& c, model::AttemptId attempt) {
  return c.Exec("attempt_ack_by_report",
                "UPDATE attempts SET acked_at = now() WHERE id = $1 AND acked_at IS NULL",
                {std::to_string(attempt)})
      .status();
}

// Appends output of `attempt` inside the caller's transaction (see AppendLog).
Status AppendLogInTx(PgConn& c, model::AttemptId attempt, std::int64_t lease_epoch,
                     const std::string& data, std::int64_t cap_bytes, const AttemptAuth& auth) {
  ASSIGN_OR_RETURN(Fenced att, CheckFence(c, attempt, lease_epoch, auth));
  const auto size = static_cast<std::int64_t>(data.size());
  // Past the cap, output is counted rather than kept: one chatty job cannot fill the disk.
  const bool keep = att.log_bytes + size <= cap_bytes;
  RETURN_IF_ERROR(c.Exec("log_account",
                         "UPDATE attempts SET log_bytes = log_bytes + $2,"
                         " log_dropped_bytes = log_dropped_bytes + $3,"
                         " acked_at = coalesce(acked_at, now()) WHERE id = $1",
                         {std::to_string(attempt), std::to_string(keep ? size : 0),
                          std::to_string(keep ? 0 : size)})
                      .status());
  if (keep) {
    RETURN_IF_ERROR(c.Exec("log_insert",
                           "INSERT INTO attempt_logs (job_id, attempt_id, data) VALUES ($1, $2, $3)",
                           {att.job_id, std::to_string(attempt), data})
                        .status());
  }
  return Status::Ok();
}

// Ends `attempt` and moves its job, inside the caller's transaction; returns the job id.
// Writes the job's move after its attempt ended (`from`: the state it is in now).
Status WriteTransition(PgConn& c, const std::string& job_id, const std::string& from,
                       const model::Transition& next) {
  const std::string to = model::ToString(next.to);
  RETURN_IF_ERROR(c.Exec("finish_job_update",
                         "UPDATE jobs SET state = $2, reason = $3, failures = $4,"
                         " not_before = CASE WHEN $5::bigint > 0 THEN now() +"
                         " make_interval(secs => $5::bigint) ELSE NULL END,"
                         " finished_at = CASE WHEN $6::bool THEN now() ELSE NULL END,"
                         " updated_at = now() WHERE id = $1",
                         {job_id, to, next.reason, std::to_string(next.failures),
                          std::to_string(next.backoff_seconds),
                          model::IsTerminal(next.to) ? "true" : "false"})
                      .status());
  return c.Exec("finish_event",
                "INSERT INTO job_events (job_id, kind, from_state, to_state, message)"
                " VALUES ($1, 'state_changed', $4, $2, $3)",
                {job_id, to, next.reason, from})
      .status();
}

// The job's row, locked: what AfterAttempt needs. Empty if it is not in state `from`.
StatusOr<std::optional<model::JobFacts>> LockJobFacts(PgConn& c, const std::string& job_id,
                                                      const std::string& from) {
  ASSIGN_OR_RETURN(auto j, c.Exec("finish_job_state",
                                  "SELECT failures, max_attempts, cancel_requested_at IS NOT NULL,"
                                  " idle_requeues FROM jobs WHERE id = $1 AND state = $2"
                                  " FOR UPDATE",
                                  {job_id, from}));
  if (j.rows() == 0) return std::optional<model::JobFacts>();
  model::JobFacts facts;
  facts.failures = static_cast<int>(j.Int(0, 0));
  facts.max_attempts = static_cast<int>(j.Int(0, 1));
  facts.cancel_requested = j.Bool(0, 2);
  facts.idle_requeues = j.Int(0, 3);
  return std::optional<model::JobFacts>(facts);
}

}  // namespace

namespace pg {

model::AttemptEnd AttemptEndOf(Outcome o) {
  switch (o) {
    case Outcome::kSucceeded:
      return model::AttemptEnd::kSucceeded;
    case Outcome::kFailed:
      return model::AttemptEnd::kFailed;
    case Outcome::kTimedOut:
      return model::AttemptEnd::kTimedOut;
    case Outcome::kCancelled:
      return model::AttemptEnd::kCancelled;
    case Outcome::kPreempted:
      return model::AttemptEnd::kPreempted;
  }
  return model::AttemptEnd::kFailed;
}

// A job moves once, when every part of its current attempt has ended: its one part, or
// the last of a multi-node gang's (decision 0032). The job's row is locked before the parts
// are read, and every part's end is written before this is called, so of two parts ending
// at once the second always sees the first: exactly one of them settles the job. Peers are
// never locked here: a part that ends badly stops the others through their heartbeats
// (heartbeat_stops), so two ends on two nodes never wait on each other. False while a part
// is still live or once settled.
StatusOr<bool> SettleJob(PgConn& c, const std::string& job_id) {
  ASSIGN_OR_RETURN(auto facts, LockJobFacts(c, job_id, "running"));
  if (!facts) return false;
  ASSIGN_OR_RETURN(auto p, c.Exec("gang_parts",
                                  "SELECT p.ended_at IS NULL, p.end_reason, p.exit_code, n.name,"
                                  " p.idle_stopped_at IS NOT NULL, p.noticed_at IS NOT NULL OR"
                                  " p.stop_reason IS NOT NULL FROM jobs j JOIN attempts p ON"
                                  " p.job_id = j.id AND p.number = j.attempt_count JOIN nodes n ON"
                                  " n.id = p.node_id WHERE j.id = $1 ORDER BY p.rank",
                                  {job_id}));
  std::vector<model::GangPart> parts;
  bool idle_stopped = false;
  for (int i = 0; i < p.rows(); ++i) {
    if (p.Bool(i, 0)) return false;
    parts.push_back({model::ParseAttemptEnd(p.Text(i, 1)), p.Bool(i, 5)});
    idle_stopped = idle_stopped || p.Bool(i, 4);
  }
  if (parts.empty()) return false;
  model::AttemptResult result;
  result.end = model::GangEnd(parts);
  // The part that decided the gang's end speaks for it: its exit code and node.
  // (For a reclaim, the reclaimed part, not a peer stopped because of it.)
  int worst = -1;
  for (int i = 0; i < static_cast<int>(parts.size()) && worst < 0; ++i)
    if (parts[i].end == result.end &&
        (result.end != model::AttemptEnd::kPreempted || parts[i].own_stop))
      worst = i;
  for (int i = 0; i < static_cast<int>(parts.size()) && worst < 0; ++i)
    if (parts[i].end == result.end) worst = i;
  if (worst < 0) worst = 0;
  if (!p.IsNull(worst, 2)) result.exit_code = static_cast<int>(p.Int(worst, 2));
  result.node = p.Text(worst, 3);
  result.idle_stopped = idle_stopped;
  RETURN_IF_ERROR(WriteTransition(c, job_id, "running", model::AfterAttempt(*facts, result)));
  return true;
}

}  // namespace pg

namespace {

// Fenced as CommitCheckpoint, except that a late result is taken (decision 0019).
// `deferred`: where a gang part's job goes to be settled later (a batch settles its gangs
// after all its reports, in job id order); null settles it now.
StatusOr<std::string> FinishInTx(PgConn& c, model::AttemptId attempt, std::int64_t lease_epoch,
                                 Outcome outcome, std::optional<int> exit_code,
                                 const AttemptAuth& auth, std::string* deferred = nullptr) {
  auto fenced = CheckFence(c, attempt, lease_epoch, auth);
  bool late = false;
  if (!fenced.ok()) {
    if (fenced.status().code() != StatusCode::kConflict || outcome == Outcome::kPreempted) {
      return fenced.status();
    }
    // A late result (decision 0019): the node was declared lost while the attempt had
    // already ended there, and its worker reports now, with the attempt's own fence. As
    // long as the job was not placed again, the result stands, so finished work is never
    // run twice. (The ledger keeps what it billed when the node was lost.) Not for a part
    // of a gang: one part's result is not the gang's, whose other parts were lost too.
    ASSIGN_OR_RETURN(auto r, c.Exec("finish_late",
                                    "SELECT a.job_id, n.name FROM attempts a JOIN nodes n ON"
                                    " n.id = a.node_id JOIN jobs j ON j.id = a.job_id"
                                    " WHERE a.id = $1 AND a.lease_epoch = $2 AND a.node_id = $3"
                                    " AND a.fence = $4 AND a.end_reason = 'node_lost'"
                                    " AND a.gang_size = 1"
                                    " AND j.state = 'pending' AND j.attempt_count = a.number"
                                    " FOR UPDATE OF a, j",
                                    {std::to_string(attempt), std::to_string(lease_epoch),
                                     std::to_string(auth.node_id), auth.fence}));
    if (r.rows() == 0) return fenced.status();
    late = true;
    fenced = Fenced{r.Text(0, 0), r.Text(0, 1)};
  }
  const Fenced& att = *fenced;
  RETURN_IF_ERROR(c.Exec("finish_attempt",
                         "UPDATE attempts SET ended_at = coalesce(ended_at,"
                         " greatest(now(), started_at)), end_reason = $2, exit_code = $3,"
                         // A late result for an attempt settled unbilled (no worker had
                         // acknowledged it) proves it ran: bill it now, below.
                         " billed = billed AND acked_at IS NOT NULL,"
                         " acked_at = coalesce(acked_at, now()) WHERE id = $1",
                         {std::to_string(attempt), ToString(outcome),
                          exit_code ? PgParam(std::to_string(*exit_code)) : std::nullopt})
                      .status());
  if (att.gang_size > 1) {
    if (outcome == Outcome::kPreempted) {
      // The worker stopped this part on its own (a notice, a shutdown) unless Frugal told
      // it to: a stop order, or a peer that had already ended badly (heartbeat_stops).
      RETURN_IF_ERROR(c.Exec("finish_gang_own_stop",
                             "UPDATE attempts a SET noticed_at = coalesce(a.noticed_at, now())"
                             " WHERE a.id = $1 AND a.stop_reason IS NULL AND NOT "
                             FRUGAL_GANG_BROKEN("a"),
                             {std::to_string(attempt)})
                          .status());
    }
    if (deferred) {
      *deferred += (deferred->empty() ? "" : ",") + att.job_id;
    } else {
      RETURN_IF_ERROR(pg::SettleJob(c, att.job_id).status());
    }
    return att.job_id;
  }
  const std::string from = late ? "pending" : "running";
  ASSIGN_OR_RETURN(auto facts, LockJobFacts(c, att.job_id, from));
  if (!facts) return Internal("job " + att.job_id + " of an active attempt is not " + from);
  model::AttemptResult result;
  result.end = pg::AttemptEndOf(outcome);
  result.exit_code = exit_code;
  result.node = att.node;
  result.idle_stopped = att.idle_stopped;
  result.late = late;
  RETURN_IF_ERROR(WriteTransition(c, att.job_id, from, model::AfterAttempt(*facts, result)));
  return att.job_id;
}

// The stop orders of `node_id`'s active attempts, and a stale order for each id of
// `running` (a jsonb array) that is not an active attempt of that node.
PgStatement StopsStatement(const std::string& node_id, const std::string& running) {
  return {"heartbeat_stops",
          "SELECT x.id, 'stale', '' FROM (SELECT jsonb_array_elements_text($2::jsonb)::bigint"
          " AS id) x WHERE NOT EXISTS (SELECT 1 FROM attempts a WHERE a.id = x.id AND"
          " a.node_id = $1 AND a.ended_at IS NULL)"
          " UNION ALL SELECT a.id, CASE WHEN j.cancel_requested_at IS NOT NULL THEN"
          " 'cancelled' ELSE coalesce(a.stop_reason, 'preempted') END, a.fence"
          " FROM attempts a JOIN jobs j ON"
          " j.id = a.job_id WHERE a.node_id = $1 AND a.ended_at IS NULL AND"
          " (j.cancel_requested_at IS NOT NULL OR a.stop_reason IS NOT NULL"
          // A gang whose part ended badly cannot go on: its other parts stop
          // and end preempted, and the gang moves as its worst part ended.
          " OR (a.gang_size > 1 AND " FRUGAL_GANG_BROKEN("a") "))",
          {node_id, running}};
}

// The stop orders StopsStatement read.
StatusOr<std::vector<StopOrder>> ParseStops(const PgResult& s) {
  std::vector<StopOrder> stops;
  for (int i = 0; i < s.rows(); ++i) {
    ASSIGN_OR_RETURN(auto reason, protocol::ParseStopReason(s.Text(i, 1)));
    stops.push_back({s.Int(i, 0), reason, s.Text(i, 2)});
  }
  return stops;
}

// `node_id`'s attempts of `epoch` not yet delivered (acknowledged), as start orders.
PgStatement AssignmentsStatement(const std::string& node_id, std::int64_t epoch) {
  return {"heartbeat_assignments",
                     std::string("SELECT a.id, a.number, a.gpus, a.fence, ") + pg::kJobColumns +
                         ", (SELECT uri FROM checkpoints k WHERE k.job_id = j.id ORDER BY step"
                         " DESC LIMIT 1), (SELECT max(step) FROM checkpoints k WHERE"
                         " k.job_id = j.id), a.rank, a.gang_size,"
                         " (SELECT coalesce(nullif(n0.address, ''), n0.name) FROM"
                         " attempts a0 JOIN nodes n0 ON n0.id = a0.node_id WHERE a0.job_id ="
                         " a.job_id AND a0.number = a.number AND a0.rank = 0),"
                         // Set by ApplyPlan; the hash it replaced for a gang started by a
                         // scheduler that predates migration 0026.
                         " coalesce(a.master_port, 20000 + "
                         FRUGAL_GANG_PORT_OFFSET("a.job_id", "a.number") "::int)"
                         " FROM attempts a JOIN jobs j ON j.id = a.job_id"
                         " JOIN teams t ON t.id = j.team_id JOIN users u ON u.id = j.user_id"
                         " WHERE a.node_id = $1 AND a.lease_epoch = $2 AND a.ended_at IS NULL"
                         " AND a.acked_at IS NULL"
                         " AND a.stop_reason IS NULL AND j.cancel_requested_at IS NULL"
                         " AND (a.gang_size = 1 OR NOT " FRUGAL_GANG_BROKEN("a") ")"
                         " ORDER BY a.id",
                     {node_id, std::to_string(epoch)}};
}

// The start orders AssignmentsStatement read.
std::vector<AttemptOrder> ParseAssignments(const PgResult& a) {
  std::vector<AttemptOrder> orders;
  constexpr int kFirstJobColumn = 4;
  for (int i = 0; i < a.rows(); ++i) {
    // Job columns start after the attempt's; the two checkpoint columns follow them.
    model::Job job = pg::ParseJob(a, i, kFirstJobColumn);
    AttemptOrder o;
    o.attempt_id = a.Int(i, 0);
    o.number = static_cast<int>(a.Int(i, 1));
    o.gpus = static_cast<int>(a.Int(i, 2));
    o.fence = a.Text(i, 3);
    o.job_id = job.id;
    o.spec = job.spec;
    const int after_job = kFirstJobColumn + pg::kJobColumnCount;
    if (!a.IsNull(i, after_job)) o.resume_from = a.Text(i, after_job);
    o.resume_step = a.OptInt(i, after_job + 1);
    o.rank = static_cast<int>(a.Int(i, after_job + 2));
    o.gang_size = static_cast<int>(a.Int(i, after_job + 3));
    if (o.gang_size > 1) {
      o.master_addr = a.IsNull(i, after_job + 4) ? "" : a.Text(i, after_job + 4);
      o.master_port = static_cast<int>(a.Int(i, after_job + 5));  // the same on every part
    }
    orders.push_back(std::move(o));
  }
  return orders;
}

}  // namespace

namespace pg {

StatusOr<int> EndAttemptsOfNode(PgConn& c, model::NodeId node) {
  return EndLostAttempts(c, "node_end_attempts",
                         "lost AS (SELECT id, name, notice_at, " + std::string(kAllEpochs) +
                             " FROM nodes WHERE id = $1)",
                         {std::to_string(node)});
}

}  // namespace pg

StatusOr<Registration> PgStore::RegisterWorker(const model::Node& n, const std::string& pool_name,
                                               Seconds lease_ttl,
                                               std::optional<model::NodeId> caller,
                                               std::optional<std::int64_t> join_token) {
  return InTransaction<Registration>(pool_, [&](PgConn& c) -> StatusOr<Registration> {
    Registration reg;
    if (join_token) {
      // An exec instance's own token (decision 0029): its node only, and only once.
      ASSIGN_OR_RETURN(auto bound, c.Exec("register_instance_token",
                                          "SELECT node_name FROM instances"
                                          " WHERE join_token_id = $1 FOR UPDATE",
                                          {std::to_string(*join_token)}));
      if (bound.rows() > 0) {
        if (bound.Text(0, 0) != n.name) {
          return Status(StatusCode::kPermissionDenied,
                        "this join token was issued for node '" + bound.Text(0, 0) +
                            "' only; register under that name");
        }
        RETURN_IF_ERROR(c.Exec("register_instance_token_used",
                               "UPDATE api_tokens SET revoked_at = now()"
                               " WHERE id = $1 AND revoked_at IS NULL",
                               {std::to_string(*join_token)})
                            .status());
      }
    }
    // The pool's GPU first (decision 0021): a node of another GPU would be priced and
    // placed as this pool's.
    ASSIGN_OR_RETURN(auto p, c.Exec("register_pool_gpu",
                                    "SELECT gpu_type, gpu_mem_gb FROM pools WHERE name = $1",
                                    {pool_name}));
    if (p.rows() == 0) return FailedPrecondition("unknown pool '" + pool_name + "'", "pool");
    model::Pool pool;
    pool.name = pool_name;
    pool.gpu_type = p.Text(0, 0);
    pool.gpu_mem_gb = static_cast<int>(p.Int(0, 1));
    RETURN_IF_ERROR(model::CheckNodeFitsPool(n, pool));
    // The node row first: an assignment racing with this registration locks it too, so it
    // either committed before (and its attempt is ended below) or waits and then sees the
    // new epoch (ApplyPlan).
    ASSIGN_OR_RETURN(auto held, c.Exec("register_lock_node",
                                       "SELECT id, state IN ('live', 'draining') AND"
                                       " lease_expires_at > now(), greatest(0, ceil(extract("
                                       "epoch FROM lease_expires_at - now())))::bigint"
                                       " FROM nodes WHERE name = $1 FOR UPDATE",
                                       {n.name}));
    if (held.rows() > 0 && held.Bool(0, 1) && caller != held.Int(0, 0)) {
      return Conflict("node '" + n.name + "' has a live lease held by another credential; a node " +
                      "cannot be taken over while it heartbeats: stop its worker, or wait " +
                      std::to_string(held.Int(0, 2)) + " s for the lease to lapse");
    }
    // A restarted worker knows nothing of its old processes: end them before re-leasing.
    ASSIGN_OR_RETURN(reg.attempts_lost,
                     EndLostAttempts(c, "reregister_end_attempts",
                                     "lost AS (SELECT id, name, notice_at, " +
                                         std::string(kAllEpochs) + " FROM nodes WHERE name = $1)",
                                     {n.name}));
    reg.credential = NewToken("frn_");
    ASSIGN_OR_RETURN(auto r, c.Exec("register_worker",
                                    "INSERT INTO nodes (name, pool_id, gpus, gpu_type, gpu_mem_gb,"
                                    " lease_expires_at, last_heartbeat_at, credential_sha256,"
                                    " credential_issued_at, address) SELECT $1, p.id, $3, $4,"
                                    " $5, now() + make_interval(secs => $6), now(), $7, now(), $8"
                                    " FROM pools p"
                                    " WHERE p.name = $2 ON CONFLICT (name) DO UPDATE SET pool_id ="
                                    " EXCLUDED.pool_id, gpus = EXCLUDED.gpus, gpu_type ="
                                    " EXCLUDED.gpu_type, gpu_mem_gb = EXCLUDED.gpu_mem_gb,"
                                    " lease_epoch = nodes.lease_epoch + 1, lease_expires_at ="
                                    " EXCLUDED.lease_expires_at, last_heartbeat_at = now(),"
                                    " credential_sha256 = EXCLUDED.credential_sha256,"
                                    " credential_issued_at = now(), address = EXCLUDED.address,"
                                    // A removed node comes back as a new one: an admin
                                    // drain of its earlier life does not carry over.
                                    " drained_at = CASE WHEN nodes.state = 'gone' THEN NULL"
                                    " ELSE nodes.drained_at END, drained_by = CASE WHEN"
                                    " nodes.state = 'gone' THEN NULL ELSE nodes.drained_by END,"
                                    " state = 'live' RETURNING id, lease_epoch",
                                    {n.name, pool_name, std::to_string(n.gpus), n.gpu_type,
                                     std::to_string(n.gpu_mem_gb),
                                     std::to_string(lease_ttl.count()),
                                     Sha256Hex(reg.credential), n.address}));
    if (r.rows() == 0) return FailedPrecondition("unknown pool '" + pool_name + "'", "pool");
    reg.node_id = r.Int(0, 0);
    reg.lease_epoch = r.Int(0, 1);
    return reg;
  });
}

StatusOr<HeartbeatReply> PgStore::Heartbeat(const HeartbeatRequest& req, Seconds lease_ttl) {
  return InTransaction<HeartbeatReply>(pool_, [&](PgConn& c) -> StatusOr<HeartbeatReply> {
    ASSIGN_OR_RETURN(auto n, c.Exec("heartbeat_lease",
                                    "UPDATE nodes SET lease_expires_at = now() +"
                                    " make_interval(secs => $3), last_heartbeat_at = now(),"
                                    " gpu_stats = $4::jsonb, state = CASE WHEN $5::bool OR $6::bool THEN"
                                    // A notice withdrawn (the worker reports neither a
                                    // notice nor a shutdown any more): the node was not
                                    // reclaimed and takes work again. An admin drain is a
                                    // column of its own (drained_at) and stays.
                                    " 'draining' WHEN notice_at IS NOT NULL THEN 'live' ELSE"
                                    " state END, notice_at = CASE WHEN $5::bool"
                                    " THEN coalesce(notice_at, now()) WHEN $6::bool THEN"
                                    " notice_at END"
                                    " WHERE id = $7 AND name = $1 AND lease_epoch = $2"
                                    " AND state IN ('live', 'draining') RETURNING id,"
                                    " (SELECT o.notice_at IS NOT NULL FROM nodes o WHERE"
                                    " o.id = nodes.id) AND notice_at IS NULL",
                                    {req.node, std::to_string(req.lease_epoch),
                                     std::to_string(lease_ttl.count()), req.gpu_stats_json,
                                     req.notice ? "true" : "false",
                                     req.draining ? "true" : "false",
                                     std::to_string(req.node_id)}));
    if (n.rows() == 0) {
      return Conflict("node '" + req.node + "' lease epoch " + std::to_string(req.lease_epoch) +
                      " is not current; stop all jobs and register again");
    }
    const std::string node_id = n.Text(0, 0);
    HeartbeatReply reply;
    reply.notice_withdrawn = n.Bool(0, 1);
    if (req.notice || req.draining) {
      // What runs here is about to be stopped for its node's reason, not its gang's.
      RETURN_IF_ERROR(c.Exec("heartbeat_noticed",
                             "UPDATE attempts a SET noticed_at = now() WHERE a.node_id = $1"
                             " AND a.ended_at IS NULL AND a.noticed_at IS NULL"
                             // A gang already broken by a peer is stopping for that.
                             " AND NOT (a.gang_size > 1 AND " FRUGAL_GANG_BROKEN("a") ")",
                             {node_id})
                          .status());
    }
    // An attempt of an older epoch can never be reported (every report is fenced by the
    // current one): end it now rather than leave its job running for as long as the node
    // heartbeats. Registration and assignment lock the node row, so this is a safety net.
    RETURN_IF_ERROR(EndLostAttempts(c, "heartbeat_end_stale",
                                    "lost AS (SELECT id, name, notice_at, lease_epoch AS"
                                    " below_epoch FROM nodes WHERE id = $1)",
                                    {node_id})
                        .status());
    json running = req.running;
    // Acknowledge what the worker runs, so it is never delivered twice.
    RETURN_IF_ERROR(c.Exec("heartbeat_ack",
                           "UPDATE attempts SET acked_at = now() WHERE node_id = $1 AND"
                           " ended_at IS NULL AND acked_at IS NULL AND id IN (SELECT"
                           " jsonb_array_elements_text($2::jsonb)::bigint)",
                           {node_id, running.dump()})
                        .status());
    // Guardrail samples (migration 0012): peak memory, and idle_since in database time,
    // reset by any busy or unknown reading.
    // The samples and the orders in one round trip, in this order.
    ASSIGN_OR_RETURN(
        auto r,
        c.ExecPipeline({{"heartbeat_usage",
                         "UPDATE attempts a SET peak_gpu_mem_mb = greatest(a.peak_gpu_mem_mb,"
                         " u.mem), idle_since = CASE WHEN u.util IS NOT NULL AND u.util <"
                         " (SELECT idle_threshold_percent FROM guardrail_settings) THEN"
                         " coalesce(a.idle_since, now()) END FROM (SELECT (e->>'attempt_id')"
                         "::bigint AS id, (e->>'utilization')::int AS util,"
                         " (e->>'memory_used_mb')::int AS mem FROM jsonb_array_elements("
                         "$2::jsonb) e) u WHERE a.id = u.id AND a.node_id = $1 AND"
                         " a.ended_at IS NULL",
                         {node_id, req.usage_json}},
                        StopsStatement(node_id, running.dump()),
                        AssignmentsStatement(node_id, req.lease_epoch)}));
    ASSIGN_OR_RETURN(reply.stops, ParseStops(r[1]));
    reply.assignments = ParseAssignments(r[2]);
    return reply;
  });
}

StatusOr<PendingOrders> PgStore::ReadOrders(model::NodeId node) {
  // One view for the reads; nothing is written. Generic plans: each read goes by the node's
  // key (decision 0049).
  return InTransaction<PendingOrders>(
      pool_, pg::kReadOnlyGenericPlansBegin, [&](PgConn& c) -> StatusOr<PendingOrders> {
        PendingOrders out;
        const std::string node_id = std::to_string(node);
        ASSIGN_OR_RETURN(auto r, c.ExecPipeline({{"orders_epoch",
                                                  "SELECT lease_epoch FROM nodes WHERE id = $1 AND"
                                                  " state IN ('live', 'draining') AND"
                                                  " lease_expires_at > now()",
                                                  {node_id}},
                                                 StopsStatement(node_id, "[]")}));
        if (r[0].rows() == 0) return out;
        out.lease_epoch = r[0].Int(0, 0);
        ASSIGN_OR_RETURN(out.stops, ParseStops(r[1]));
        ASSIGN_OR_RETURN(auto a, c.Exec(AssignmentsStatement(node_id, out.lease_epoch)));
        out.assignments = ParseAssignments(a);
        return out;
      });
}

Status PgStore::CommitCheckpoint(const CheckpointReport& r, const AttemptAuth& auth) {
  return InTransaction<int>(pool_, [&](PgConn& c) -> StatusOr<int> {
    ASSIGN_OR_RETURN(Fenced att, CheckFence(c, r.attempt_id, r.lease_epoch, auth));
    RETURN_IF_ERROR(MarkAcknowledged(c, r.attempt_id));
    if (att.rank > 0) {
      // One checkpoint per step for the whole gang (decision 0032): rank 0 writes it, as
      // torch.distributed programs do; the others' state is in it.
      return FailedPrecondition("only rank 0 of a multi-node gang commits checkpoints; this "
                                "attempt is rank " + std::to_string(att.rank),
                                "attempt_id");
    }
    if (att.latest_step && r.step <= *att.latest_step) {
      return FailedPrecondition("step " + std::to_string(r.step) +
                                    " does not advance the latest committed step " +
                                    std::to_string(*att.latest_step),
                                "step");
    }
    RETURN_IF_ERROR(c.Exec("checkpoint_insert",
                           "INSERT INTO checkpoints (job_id, attempt_id, step, progress, uri,"
                           " size_bytes) VALUES ($1, $2, $3, $4, $5, $6)",
                           {att.job_id, std::to_string(r.attempt_id), std::to_string(r.step),
                            std::to_string(r.progress), r.uri, std::to_string(r.size_bytes)})
                        .status());
    return 1;
  }).status();
}

Status PgStore::AppendLog(model::AttemptId attempt, std::int64_t lease_epoch,
                          const std::string& data, std::int64_t cap_bytes,
                          const AttemptAuth& auth) {
  return InTransaction<int>(pool_, [&](PgConn& c) -> StatusOr<int> {
    RETURN_IF_ERROR(AppendLogInTx(c, attempt, lease_epoch, data, cap_bytes, auth));
    return 1;
  }).status();
}

StatusOr<model::Job> PgStore::FinishAttempt(model::AttemptId attempt, std::int64_t lease_epoch,
                                            Outcome outcome, std::optional<int> exit_code,
                                            const AttemptAuth& auth) {
  return InTransaction<model::Job>(pool_, [&](PgConn& c) -> StatusOr<model::Job> {
    ASSIGN_OR_RETURN(std::string job_id,
                     FinishInTx(c, attempt, lease_epoch, outcome, exit_code, auth));
    RETURN_IF_ERROR(pg::BillAttempts(c, {attempt}).status());
    ASSIGN_OR_RETURN(auto job, c.Exec("job_by_id_plain",
                                      std::string("SELECT ") + pg::kJobColumns +
                                          " FROM jobs j JOIN teams t ON t.id = j.team_id"
                                          " JOIN users u ON u.id = j.user_id WHERE j.id = $1",
                                      {job_id}));
    return pg::ParseJob(job, 0);
  });
}

StatusOr<std::vector<FinishResult>> PgStore::FinishAttempts(
    const std::vector<FinishReport>& reports, std::int64_t log_cap_bytes, const AttemptAuth& node) {
  using Results = std::vector<FinishResult>;
  // Generic plans (decision 0049): each statement here finds its rows by key whatever the
  // batch, and a custom plan for each batch cost more to make than to run.
  return InTransaction<Results>(pool_, pg::kGenericPlansBegin, [&](PgConn& c) -> StatusOr<Results> {
    Results out(reports.size());
    std::string ids;    // a bigint[] literal of the finished jobs
    std::string gangs;  // gangs whose part ended, settled after the loop
    std::vector<model::AttemptId> ended;  // billed after the loop
    // The common reports in one pass, billed there; the rest one by one, each under a
    // savepoint.
    ASSIGN_OR_RETURN(auto common,
                     pg::FinishCommonReports(c, reports, log_cap_bytes, node.node_id, out));
    for (std::size_t i = 0; i < reports.size(); ++i) {
      if (!common[i]) continue;
      ids += (ids.empty() ? "" : ",") + std::to_string(out[i].job_id);
    }
    for (std::size_t i = 0; i < reports.size(); ++i) {
      if (common[i]) continue;
      const FinishReport& r = reports[i];
      const AttemptAuth auth{node.node_id, r.fence};
      // A refused report undoes only its own statements; the batch goes on.
      RETURN_IF_ERROR(c.ExecScript("SAVEPOINT finish_one").status());
      Status st = r.log.empty()
                      ? Status::Ok()
                      : AppendLogInTx(c, r.attempt_id, r.lease_epoch, r.log, log_cap_bytes, auth);
      std::string gang;
      StatusOr<std::string> job = st.ok() ? FinishInTx(c, r.attempt_id, r.lease_epoch, r.outcome,
                                                       r.exit_code, auth, &gang)
                                          : StatusOr<std::string>(st);
      if (!job.ok()) {
        // Not a refusal but a broken connection: the whole batch fails and is retried.
        if (job.status().code() == StatusCode::kUnavailable) return job.status();
        RETURN_IF_ERROR(c.ExecScript("ROLLBACK TO SAVEPOINT finish_one").status());
        out[i].status = job.status();
        continue;
      }
      RETURN_IF_ERROR(c.ExecScript("RELEASE SAVEPOINT finish_one").status());
      out[i].job_id = std::stoll(*job);
      ended.push_back(r.attempt_id);
      ids += (ids.empty() ? "" : ",") + *job;
      if (!gang.empty()) gangs += (gangs.empty() ? "" : ",") + gang;
    }
    RETURN_IF_ERROR(SettleJobs(c, gangs));
    if (ids.empty()) {
      RETURN_IF_ERROR(pg::BillAttempts(c, ended).status());
      return out;
    }
    // The bill, if any is left, and the jobs' states in one round trip.
    std::vector<PgStatement> last;
    if (!ended.empty()) last.push_back(pg::BillStatement(ended));
    last.push_back({"finish_batch_states",
                    "SELECT id, state FROM jobs WHERE id = ANY($1::bigint[])",
                    {"{" + ids + "}"}});
    ASSIGN_OR_RETURN(auto read, c.ExecPipeline(last));
    const PgResult& states = read.back();
    std::map<std::int64_t, model::JobState> by_id;
    for (int k = 0; k < states.rows(); ++k) {
      auto state = model::ParseJobState(states.Text(k, 1));
      if (state.ok()) by_id[states.Int(k, 0)] = *state;
    }
    for (auto& result : out) {
      if (result.status.ok()) result.state = by_id[result.job_id];
    }
    return out;
  });
}

StatusOr<PgStatement> PgStore::SweepCheck() {
  std::int64_t term;
  {
    std::lock_guard<std::mutex> lock(leader_mu_);
    term = term_;
  }
  if (term == 0) return NotLeader("this scheduler holds no leader term");
  return PgStatement{"sweep_lost_nodes_any",
                     "SELECT EXISTS (SELECT 1 FROM nodes WHERE state IN ('live', 'draining')"
                     " AND lease_expires_at < now()), EXISTS (SELECT 1 FROM leader_lease"
                     " WHERE term = $1 AND holder = $2 AND expires_at > clock_timestamp())",
                     {std::to_string(term), instance_id_}};
}

StatusOr<std::vector<LostNode>> PgStore::SweepLostNodes() {
  // Every cycle sweeps, and nearly every sweep finds no lease run out: one read outside any
  // transaction answers those, sparing them the fenced transaction, whose row lock on the
  // leader lease makes its commit a WAL flush (decision 0048). A lease that runs out just
  // after the read is swept by the next cycle, as one that runs out just after the UPDATE
  // is. The read also looks at this scheduler's term, without locking it: a term that may
  // have ended goes to the fence, which refuses as it always did.
  ASSIGN_OR_RETURN(const PgStatement check, SweepCheck());
  ASSIGN_OR_RETURN(const bool due,
                   Autocommit<bool>(pool_, Repeat::kReads, [&](PgConn& c) -> StatusOr<bool> {
                     ASSIGN_OR_RETURN(auto r, c.Exec(check));
                     return SweepDue(r);
                   }));
  if (!due) return std::vector<LostNode>{};
  return SweepFenced();
}

bool PgStore::SweepDue(const PgResult& check) { return check.Bool(0, 0) || !check.Bool(0, 1); }

StatusOr<std::vector<LostNode>> PgStore::SweepFenced() {
  return InTransaction<std::vector<LostNode>>(pool_, [&](PgConn& c) -> StatusOr<std::vector<LostNode>> {
    RETURN_IF_ERROR(CheckLeaderFence(c));
    return EndLostAttemptsByNode(c, "sweep_lost_nodes",
                           "lost AS (UPDATE nodes SET state = 'lost' WHERE state IN ('live',"
                           " 'draining') AND lease_expires_at < now()"
                           " RETURNING id, name, notice_at, " + std::string(kAllEpochs) + ")",
                           {});
  });
}

StatusOr<std::vector<LogChunk>> PgStore::ReadLogs(model::JobId job,
                                                  std::optional<model::TeamId> visible_team,
                                                  std::int64_t after_seq, int limit) {
  return InTransaction<std::vector<LogChunk>>(
      pool_, [&](PgConn& c) -> StatusOr<std::vector<LogChunk>> {
        ASSIGN_OR_RETURN(auto j, c.Exec("logs_job_visible",
                                        "SELECT 1 FROM jobs WHERE id = $1 AND ($2::bigint IS NULL"
                                        " OR team_id = $2)",
                                        {std::to_string(job), visible_team
                                                                  ? PgParam(std::to_string(*visible_team))
                                                                  : std::nullopt}));
        if (j.rows() == 0) return NotFound("job " + std::to_string(job) + " not found");
        ASSIGN_OR_RETURN(auto r, c.Exec("logs_read",
                                        "SELECT l.id, a.number, l.data FROM attempt_logs l JOIN"
                                        " attempts a ON a.id = l.attempt_id WHERE l.job_id = $1"
                                        " AND l.id > $2 ORDER BY l.id LIMIT $3",
                                        {std::to_string(job), std::to_string(after_seq),
                                         std::to_string(limit)}));
        std::vector<LogChunk> out;
        for (int i = 0; i < r.rows(); ++i) {
          out.push_back({r.Int(i, 0), static_cast<int>(r.Int(i, 1)), r.Text(i, 2)});
        }
        return out;
      });
}

}  // namespace frugal::store
