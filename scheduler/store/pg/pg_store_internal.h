// Helpers shared by the pg_store_*.cc files: SQL fragments and the functions one file's
// transaction calls in another's. Only scheduler/store/pg includes this header.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"

namespace frugal::store {

namespace pg {
// SQL expression: a timestamptz column as integer microseconds since the epoch.
#define FRUGAL_US(col) "(extract(epoch from " col ") * 1000000)::bigint"
// SQL expression: the stop kind of attempt alias `a` as users see it (text, NULL for none):
// the scheduler's own stop orders (attempts.stop_kind) or 'idle_reclaim' for the idle
// guardrail's (attempts.idle_stopped_at: a column of its own, since stop_kind's CHECK
// requires stop_reason 'preempted' and an idle stop may be 'cancelled'; decision 0012).
#define FRUGAL_STOP_KIND(a)                                      \
  "coalesce(" a ".stop_kind, CASE WHEN " a ".idle_stopped_at IS NOT NULL" \
  " THEN 'idle_reclaim' END)"
// SQL expression: the GPUs pool alias `p` is paid for now (issue 17). Reserved: its
// committed_gpus, or else the GPUs of its registered nodes, lost ones included (a reserved
// machine is paid for while down). Other kinds: the GPUs of its live and draining nodes.
// Never max_gpus, which is only how far a pool may grow.
#define FRUGAL_PAID_GPUS(p)                                                                  \
  "(CASE WHEN " p ".capacity_kind = 'reserved' AND " p ".committed_gpus > 0 THEN "           \
  p ".committed_gpus ELSE coalesce((SELECT sum(pn.gpus) FROM nodes pn WHERE pn.pool_id = " p \
  ".id AND pn.state IN ('live', 'draining'"                                                  \
  " , CASE WHEN " p ".capacity_kind = 'reserved' THEN 'lost' END)), 0) END)::bigint"
Timestamp FromMicros(std::int64_t us);
// A leader_lease holder id: "host:pid:" and 32 random hex characters (pg_store_leader.cc).
std::string NewInstanceId();
std::optional<Timestamp> OptTime(const PgResult& r, int row, int col);
std::string ToMicrosParam(Timestamp t);
// A timestamptz parameter (RFC 3339 text, microseconds).
std::string ToTimeParam(Timestamp t);
// Writes the ledger entries of these attempts, and of their gangs' other parts, where they
// have ended and are not billed yet (a gang's parts once its last has ended). Call in the
// transaction that ends attempts, with the attempts it ended, so an attempt is never ended
// without its cost. By id, not "every unbilled attempt" (decision 0035): that read's cached
// plan scanned every job once the queue grew, and every heartbeat ran it.
StatusOr<int> BillAttempts(PgConn& c, const std::vector<model::AttemptId>& attempts);
// How a transaction begins whose statements use generic plans (decision 0049): for
// statements that find their rows by key, where a custom plan for each call cost more to
// make than to run.
inline constexpr const char* kGenericPlansBegin =
    "BEGIN; SET LOCAL plan_cache_mode = force_generic_plan";
// The same for a transaction that only reads, all its statements from one view.
inline constexpr const char* kReadOnlyGenericPlansBegin =
    "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY;"
    " SET LOCAL plan_cache_mode = force_generic_plan";
// BillAttempts' statement (attempts not empty), for a pipeline; it answers with one row,
// the number of attempts billed.
PgStatement BillStatement(const std::vector<model::AttemptId>& attempts);
// BillAttempts fused with the statement that ends the attempts (decision 0052): `update`
// is an `UPDATE attempts a SET ..., billed = true ... WHERE ...` (no RETURNING) that ends
// single-node attempts only; the statement bills the rows it updated, as BillAttempts
// would after it, so each attempt's row is written once instead of twice. It answers with
// one row, the number of attempts billed.
std::string EndAndBillSql(const std::string& update);
// Every team's quota, by pool id, for the snapshot; as a statement and its parser for a
// pipeline (PgConn::ExecPipeline).
StatusOr<std::map<model::TeamId, model::TeamQuota>> LoadQuotas(PgConn& c);
PgStatement QuotasStatement();
std::map<model::TeamId, model::TeamQuota> ParseQuotas(const PgResult& r);
// Every team's budget in the current period (spent and committed), for the snapshot.
StatusOr<std::map<model::TeamId, model::TeamBudget>> LoadBudgets(PgConn& c);
// Columns of a job row (joined with teams t and users u), and its parser.
extern const char* const kJobColumns;
constexpr int kJobColumnCount = 34;
// A team id as a parameter, or NULL for "every team" (admins).
std::optional<std::string> VisibleParam(std::optional<model::TeamId> team);
// FailedPrecondition naming the jobs of `after` that do not exist or that `team` cannot
// see (admins see every team's).
Status CheckDependencies(PgConn& c, const std::vector<model::JobId>& after, model::TeamId team,
                         bool admin);
// Inserts `reqs` as jobs in the caller's transaction, ids drawn in order (decision 0024);
// with `array_id`, task i of the array has index `indices[i]`.
StatusOr<std::vector<BatchItem>> InsertJobs(PgConn& c, const Principal& who,
                                            const std::vector<SubmitRequest>& reqs,
                                            std::optional<std::int64_t> array_id = std::nullopt,
                                            const std::vector<int>& indices = {});
// Parses a job whose kJobColumns start at column `first`.
model::Job ParseJob(const PgResult& r, int row, int first = 0);
// Every pool, with what the store learned (reclaim rate, mean outage, and for spot pools
// the fitted availability chain and where the pool stands now). `cache`: where parsed
// fitted models are kept between calls; null parses each one.
StatusOr<std::vector<model::Pool>> LoadPools(PgConn& c, AvailabilityCache* cache = nullptr);
// LoadPools' two reads (the pools, the spot pools' gang models), for a pipeline, and their
// parser.
std::vector<PgStatement> PoolsStatements();
std::vector<model::Pool> ParsePools(const PgResult& pools, const PgResult& gangs,
                                    AvailabilityCache* cache);
// An attempt's cost and lost work (attempts a joined with its pool p), shared by the
// timeline, the jobs list's summaries and the array summary so the two can never disagree. Running (and not
// yet billed) attempts are priced up to now, as the cost report does.
#define FRUGAL_ATTEMPT_COST                                                                  \
  "CASE WHEN a.billed THEN coalesce((SELECT sum(l.amount_micros) FROM ledger_entries l"       \
  "   WHERE l.attempt_id = a.id AND l.kind = 'usage'), 0)"                                    \
  " ELSE frugal_cost_micros(a.gpus, p.price_micros_per_gpu_hour, a.started_at, a.started_at," \
  "   greatest(a.started_at, coalesce(a.ended_at, now()))) END"
#define FRUGAL_ATTEMPT_LOST                                                          \
  "coalesce((SELECT sum(l.amount_micros) FROM ledger_entries l WHERE l.attempt_id = a.id" \
  "   AND l.kind = 'lost_work'), 0)"

// SQL expression: the end of node `n`'s life as availability sees it (decision 0023): its
// reclaim notice, else now while its lease is live, else its last heartbeat.
#define FRUGAL_LIFE_END(n)                                                            \
  "(CASE WHEN " n ".notice_at IS NOT NULL THEN greatest(" n ".notice_at, " n          \
  ".registered_at) WHEN " n ".state IN ('live', 'draining') AND " n ".lease_expires_at" \
  " > now() THEN now() ELSE coalesce(" n ".last_heartbeat_at, " n ".registered_at) END)"
// Whether Frugal ended a node's life on purpose (decision 0023): drained, or its exec
// instance destroyed as idle; such an end is no evidence that the capacity went away.
#define FRUGAL_LIFE_RELEASED(n)                                                          \
  "(" n ".notice_at IS NULL AND (" n ".drained_at IS NOT NULL OR coalesce((SELECT"        \
  " i.reason = 'idle' FROM instances i WHERE i.node_name = " n ".name AND i.pool_id = " n \
  ".pool_id ORDER BY i.id DESC LIMIT 1), false)))"
// Admin changes inside a caller's transaction, audited there (pg_store_admin.cc,
// pg_store_quotas.cc); ApplyConfig and the single-change methods share them. Each says
// what changed (kUnchanged writes no audit row).
struct PoolChange {
  ConfigChange change;
  model::Pool pool;  // with its id
};
// Ends every active attempt on `node` as its lease being lost (node_lost, or preempted
// after a spot notice), requeues their jobs and bills them (pg_store_workers.cc).
StatusOr<int> EndAttemptsOfNode(PgConn& c, model::NodeId node);
// Moves a running job once every part of its current attempt has ended (one part, or a
// multi-node gang's N: model::GangEnd, then AfterAttempt); false while a part is live or
// if it is not running. Locks the job's row. Call after writing the part's end, in the same
// transaction.
StatusOr<bool> SettleJob(PgConn& c, const std::string& job_id);
// The worker protocol's outcome as the attempt's end (model/lifecycle.h).
model::AttemptEnd AttemptEndOf(Outcome o);
// Finishes, in a few statements for the whole batch, every report of `reports` that is the
// common case: a live single-node attempt of `node`, under its fence and epoch, whose job
// is running (decision 0037). Writes what FinishInTx and AppendLogInTx would, sets those
// reports' job ids in `out`, and returns which it finished; the rest are left untouched
// for the report-by-report path. Call inside the batch's transaction, before that path.
StatusOr<std::vector<bool>> FinishCommonReports(PgConn& c, const std::vector<FinishReport>& reports,
                                                std::int64_t log_cap_bytes, model::NodeId node,
                                                std::vector<FinishResult>& out);
// SQL: where a gang's rendezvous port search starts (decision 0032), 0-9999 from the job
// id and attempt number; ports are 20000 + it. ApplyPlan counts free ports from it; the
// heartbeat falls back to it for a gang started before migration 0026 stored the port.
#define FRUGAL_GANG_PORT_OFFSET(job, number) "((" job " * 1000003 + " number ") % 10000)"
// SQL: true if another part of the gang attempt `a` (an attempts alias) has ended other
// than succeeded, so `a` cannot go on.
#define FRUGAL_GANG_BROKEN(a)                                                              \
  "EXISTS (SELECT 1 FROM attempts gp WHERE gp.job_id = " a ".job_id AND gp.number = " a \
  ".number AND gp.id <> " a ".id AND gp.ended_at IS NOT NULL AND gp.end_reason <>"        \
  " 'succeeded')"
StatusOr<PoolChange> UpsertPoolTx(PgConn& c, const Principal& actor, const model::Pool& pool);
struct TeamChange {
  ConfigChange change;
  model::TeamId id = 0;
};
// Conflict when the team exists, unless `exist_ok` (then kUnchanged).
StatusOr<TeamChange> CreateTeamTx(PgConn& c, const Principal& actor, const std::string& name,
                                  bool exist_ok);
struct QuotaChange {
  ConfigChange change;
  QuotaSpec saved;
};
StatusOr<QuotaChange> SetQuotaTx(PgConn& c, const Principal& actor, const std::string& team,
                                 const QuotaSpec& quota);
// pg_store_budgets.cc, pg_store_guardrails.cc: NotFound when the team does not exist.
StatusOr<ConfigChange> SetBudgetTx(PgConn& c, const Principal& actor, const std::string& team,
                                   const BudgetSpec& budget);
StatusOr<ConfigChange> SetGuardrailsTx(PgConn& c, const Principal& actor,
                                       const model::GuardrailSettings& s);
StatusOr<ConfigChange> SetTeamIdlePolicyTx(PgConn& c, const Principal& actor,
                                           const std::string& team, model::IdlePolicy policy);
// In the caller's transaction (ApplyPlan's), after its fence: the idle guardrail's
// warnings and stop orders (CycleStore::ApplyPlan); returns the stops written
// (pg_store_guardrails.cc).
StatusOr<int> ApplyIdleActions(PgConn& c, const std::vector<model::IdleAction>& actions);
// In the caller's transaction, after its fence: KeeperStore::FireBudgetAlerts
// (pg_store_budgets.cc). With `any_checked` the caller has already read
// AnyBudgetStatement() in this transaction and found a budget (most clusters have none:
// the check goes in the caller's pipeline, and this is called only when it is true).
StatusOr<std::vector<BudgetAlert>> FireBudgetAlerts(PgConn& c, std::optional<Timestamp> at,
                                                    bool any_checked = false);
// Whether any team has a budget: one row, one boolean.
PgStatement AnyBudgetStatement();
}  // namespace pg

}  // namespace frugal::store
