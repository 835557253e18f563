// PostgreSQL adapter of the JobStore port. Every method runs as one transaction on a
// pooled connection; leadership is the leader_lease row (pg_store_leader.cc, decision
// 0020), and the engine's writes are fenced by its term.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "scheduler/model/lifecycle.h"
#include "scheduler/store/cost_store.h"
#include "scheduler/store/instance_store.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/worker_store.h"
#include "scheduler/store/pg/pg_conn.h"

namespace frugal::store {

namespace pg {
// The fitted availability models LoadPools parsed, by pool, reused while the pool's
// fitted_at is unchanged: the cycle reads the JSON text but parses it once per refit.
// Thread-safe (the cycle and HTTP handlers load pools concurrently).
class AvailabilityCache {
 public:
  // The model of `json_text`, fitted at `fitted_at_us`; null when the text is malformed.
  std::shared_ptr<const model::AvailabilityModel> Get(model::PoolId pool,
                                                      std::int64_t fitted_at_us,
                                                      const std::string& json_text);

 private:
  std::mutex mu_;
  std::map<model::PoolId, std::pair<std::int64_t, std::shared_ptr<const model::AvailabilityModel>>>
      by_pool_;  // guarded by mu_
};
}  // namespace pg

class PgStore final : public JobStore, public WorkerStore, public CostStore, public InstanceStore {
 public:
  // `conninfo` is a libpq connection string or URL; the schema must be migrated already.
  // `options`: the statement and lock timeouts of every connection it opens.
  PgStore(std::string conninfo, int pool_size, PgConnOptions options = DefaultPoolOptions());

  Status Ping() override;

  // InstanceStore (pg_store_instances.cc): the exec provider's cloud instances.
  StatusOr<std::vector<Instance>> ListInstances(std::optional<Timestamp> ended_since) override;
  StatusOr<Instance> AddInstance(const std::string& pool, const std::string& node, int gpus,
                                 const std::string& instance_id,
                                 const std::string& join_token_sha256) override;
  StatusOr<Instance> ChangeInstance(std::int64_t id, const std::vector<InstanceState>& from,
                                    const InstanceChange& change) override;
  StatusOr<Principal> Authenticate(const std::string& token_sha256) override;
  StatusOr<SubmitResult> Submit(const Principal& who, const SubmitRequest& req) override;
  StatusOr<std::vector<BatchItem>> SubmitBatch(const Principal& who,
                                               const std::vector<SubmitRequest>& reqs) override;
  StatusOr<ArrayResult> SubmitArray(const Principal& who, const ArrayRequest& req) override;
  StatusOr<ArraySummary> GetArray(std::int64_t id,
                                  std::optional<model::TeamId> visible_team) override;
  StatusOr<int> CancelArray(std::int64_t id, std::optional<model::TeamId> visible_team,
                            const std::string& actor) override;
  StatusOr<std::vector<model::JobId>> ArrayTasks(
      const std::vector<std::int64_t>& arrays, std::optional<model::TeamId> visible_team) override;
  StatusOr<JobPage> ListJobs(const JobFilter& filter) override;
  StatusOr<JobDetail> GetJob(model::JobId id, std::optional<model::TeamId> visible_team) override;
  StatusOr<model::Job> CancelJob(model::JobId id, std::optional<model::TeamId> visible_team,
                                 const std::string& actor) override;

  using JobStore::CreateTeam;  // the SystemActor() conveniences
  using JobStore::CreateToken;
  using JobStore::SetQuota;
  using JobStore::UpsertPool;
  StatusOr<Team> CreateTeam(const Principal& actor, const std::string& name) override;
  StatusOr<std::vector<Team>> ListTeams() override;
  StatusOr<QuotaSpec> SetQuota(const Principal& actor, const std::string& team,
                               const QuotaSpec& quota) override;  // pg_store_quotas.cc
  StatusOr<QuotaSpec> GetQuota(const std::string& team) override;
  // pg_store_budgets.cc
  using JobStore::SetBudget;  // SystemActor() conveniences, as above
  using JobStore::SetGuardrails;
  using JobStore::SetTeamIdlePolicy;
  using JobStore::ApproveJob;
  StatusOr<BudgetSpec> SetBudget(const Principal& actor, const std::string& team,
                                 const BudgetSpec& budget) override;
  StatusOr<BudgetSpec> GetBudget(const std::string& team) override;
  StatusOr<BudgetStatus> GetBudgetStatus(const std::string& team,
                                         std::optional<Timestamp> at) override;
  StatusOr<std::vector<BudgetAlert>> FireBudgetAlerts(std::optional<Timestamp> at) override;
  StatusOr<std::vector<AlertDelivery>> ClaimAlertDeliveries(int limit) override;
  Status RecordAlertDelivery(std::int64_t alert_id, bool delivered, const std::string& error,
                             int max_attempts, Seconds backoff) override;
  StatusOr<IssuedToken> CreateToken(const Principal& actor, const std::string& team,
                                    const std::string& user, Role role,
                                    const std::string& token_sha256) override;
  StatusOr<IssuedToken> Bootstrap(const std::string& token_sha256) override;
  // pg_store_admin.cc
  StatusOr<std::vector<TokenInfo>> ListTokens() override;
  StatusOr<TokenInfo> RevokeToken(const Principal& actor, std::int64_t id) override;
  StatusOr<std::vector<AuditEntry>> ListAudit(const AuditFilter& filter) override;
  StatusOr<std::vector<ConfigChange>> ApplyConfig(const Principal& actor,
                                                  const DesiredState& desired,
                                                  bool dry_run) override;  // pg_store_apply.cc

  StatusOr<model::Pool> UpsertPool(const Principal& actor, const model::Pool& pool) override;
  StatusOr<std::vector<model::Pool>> ListPools() override;
  // pg_store_availability.cc
  StatusOr<PoolAvailability> ImportAvailability(const Principal& actor, const std::string& pool,
                                                const model::AvailabilityModel& counts,
                                                const std::string& source) override;
  StatusOr<PoolAvailability> GetAvailability(const std::string& pool) override;
  StatusOr<std::vector<RefitResult>> RefitAvailability() override;
  StatusOr<std::vector<std::string>> RefreshStatistics() override;

  // pg_store_nodes.cc
  StatusOr<std::vector<NodeInfo>> ListNodes() override;
  StatusOr<NodeInfo> DrainNode(const Principal& actor, const std::string& name) override;
  StatusOr<NodeInfo> UndrainNode(const Principal& actor, const std::string& name) override;
  StatusOr<NodeInfo> RemoveNode(const Principal& actor, const std::string& name) override;

  StatusOr<std::vector<LostNode>> SweepLostNodes() override;
  StatusOr<LeaderStatus> TryLeadership(std::chrono::milliseconds ttl) override;
  Status ReleaseLeadership() override;
  // This store's holder id in leader_lease: host, pid and 128 random bits, fixed for the
  // store's life (a restarted scheduler is a new holder).
  const std::string& instance_id() const { return instance_id_; }
  StatusOr<model::Snapshot> LoadSnapshot(const PendingWindow& window) override;
  StatusOr<AppliedPlan> ApplyPlan(const model::Plan& plan) override;
  StatusOr<StoreMetrics> LoadMetrics() override;  // pg_store_metrics.cc
  StatusOr<std::vector<Interruption>> RecentInterruptions(std::optional<model::TeamId> team,
                                                         int limit) override;  // pg_store_dashboard.cc
  StatusOr<store::JobTimeline> JobTimeline(model::JobId id,
                                           std::optional<model::TeamId> visible_team) override;
  StatusOr<std::map<model::JobId, JobSummary>> JobSummaries(
      const std::vector<model::JobId>& ids) override;

  StatusOr<Registration> RegisterWorker(const model::Node& node, const std::string& pool_name,
                                        Seconds lease_ttl, std::optional<model::NodeId> caller,
                                        std::optional<std::int64_t> join_token = std::nullopt) override;
  StatusOr<HeartbeatReply> Heartbeat(const HeartbeatRequest& req, Seconds lease_ttl) override;
  StatusOr<PendingOrders> ReadOrders(model::NodeId node) override;
  Status CommitCheckpoint(const CheckpointReport& report, const AttemptAuth& auth) override;
  Status AppendLog(model::AttemptId attempt, std::int64_t lease_epoch, const std::string& data,
                   std::int64_t cap_bytes, const AttemptAuth& auth) override;
  StatusOr<model::Job> FinishAttempt(model::AttemptId attempt, std::int64_t lease_epoch,
                                     Outcome outcome, std::optional<int> exit_code,
                                     const AttemptAuth& auth) override;
  StatusOr<std::vector<FinishResult>> FinishAttempts(const std::vector<FinishReport>& reports,
                                                     std::int64_t log_cap_bytes,
                                                     const AttemptAuth& node) override;
  StatusOr<std::vector<LogChunk>> ReadLogs(model::JobId job,
                                           std::optional<model::TeamId> visible_team,
                                           std::int64_t after_seq, int limit) override;

  StatusOr<CostReport> Cost(const CostQuery& query) override;
  StatusOr<std::vector<model::JobUsage>> EndedJobUsage(const CostQuery& query) override;

  // pg_store_guardrails.cc
  StatusOr<model::GuardrailSettings> GetGuardrails() override;
  StatusOr<model::GuardrailSettings> SetGuardrails(const Principal& actor,
                                                   const model::GuardrailSettings& s) override;
  StatusOr<model::IdlePolicy> GetTeamIdlePolicy(const std::string& team) override;
  StatusOr<model::IdlePolicy> SetTeamIdlePolicy(const Principal& actor, const std::string& team,
                                                model::IdlePolicy policy) override;
  StatusOr<model::Job> ApproveJob(const Principal& actor, model::JobId id) override;

 private:
  // The fence: the first statement of every engine write transaction (see JobStore).
  Status CheckLeaderFence(PgConn& c);
  // Why the term this store held has ended (reads the row), for the log.
  std::string LostReason(PgConn& c, std::int64_t term);

  // Fair share's input (decisions 0028, 0035): each team's decayed GPU-hours of attempts
  // that ended up to `cut_us`, as they stood at `at_us` (database time). Taken whole at
  // `full_at_us` and every kFairShareRefreshUs after; between, what ended since is folded
  // in every kFairShareFoldUs, and a snapshot adds only what ended after the cut.
  struct FairShareBase {
    std::int64_t full_at_us = 0;
    std::int64_t at_us = 0;
    std::int64_t cut_us = 0;
    std::map<model::TeamId, double> hours;
  };
  // `open_since_us`: when the oldest other transaction open at the snapshot began.
  StatusOr<std::map<model::TeamId, double>> TeamUsage(PgConn& c, std::int64_t now_us,
                                                      std::optional<std::int64_t> open_since_us);

  PgPool pool_;
  pg::AvailabilityCache availability_cache_;  // thread-safe itself
  std::mutex fair_share_mu_;
  FairShareBase fair_share_;  // guarded by fair_share_mu_
  const std::string instance_id_;
  std::mutex leader_mu_;
  std::int64_t term_ = 0;                // guarded by leader_mu_; 0: not the leader
  std::chrono::milliseconds lease_ttl_{0};  // guarded by leader_mu_; the last ttl asked
  // Guarded by leader_mu_: when the last renewal of term_ was sent (before it, so the lease
  // lasts at least ttl from here by any clock's rate).
  std::chrono::steady_clock::time_point renewed_at_{};
};

// --- helpers shared by the pg_store_*.cc files ---
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
// Every team's quota, by pool id, for the snapshot.
StatusOr<std::map<model::TeamId, model::TeamQuota>> LoadQuotas(PgConn& c);
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
// warnings and stop orders (JobStore::ApplyPlan); returns the stops written
// (pg_store_guardrails.cc).
StatusOr<int> ApplyIdleActions(PgConn& c, const std::vector<model::IdleAction>& actions);
// In the caller's transaction, after its fence: JobStore::FireBudgetAlerts
// (pg_store_budgets.cc).
StatusOr<std::vector<BudgetAlert>> FireBudgetAlerts(PgConn& c, std::optional<Timestamp> at);
}  // namespace pg

}  // namespace frugal::store
