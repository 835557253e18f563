// PostgreSQL adapter of the store ports (JobStore, WorkerStore, CostStore, InstanceStore).
// This header is all that the composition root needs and includes no libpq; the adapter's
// own files share pg_store_internal.h. Every method runs as one transaction on a
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
#include "scheduler/store/pg/pg_options.h"

namespace frugal::store {

class PgConn;
class PgPool;
class PgResult;
struct PgStatement;

namespace pg {
// The fitted availability models LoadPools parsed, by pool, reused while the pool's
// fitted_at is unchanged: the cycle reads the JSON text but parses it once per refit.
// Thread-safe (the cycle and HTTP handlers load pools concurrently).
class AvailabilityCache {
 public:
  // The model of `json_text`, fitted at `fitted_at_us`; null when the text is malformed.
  // `nodes` > 1: the pool's model for gangs of that many nodes (decision 0032).
  std::shared_ptr<const model::AvailabilityModel> Get(model::PoolId pool, std::int64_t fitted_at_us,
                                                      const std::string& json_text, int nodes = 1);

 private:
  std::mutex mu_;
  std::map<std::pair<model::PoolId, int>,
           std::pair<std::int64_t, std::shared_ptr<const model::AvailabilityModel>>>
      by_pool_;  // guarded by mu_
};
}  // namespace pg

class PgStore final : public JobStore, public WorkerStore, public CostStore, public InstanceStore {
 public:
  // `conninfo` is a libpq connection string or URL; the schema must be migrated already.
  // `options`: the statement and lock timeouts of every connection it opens.
  PgStore(std::string conninfo, int pool_size, PgConnOptions options = DefaultPoolOptions());
  ~PgStore() override;

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
  StatusOr<std::vector<SubmitResult>> SubmitMany(const Principal& who,
                                                 const std::vector<SubmitRequest>& reqs) override;
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
  StatusOr<QueuePosition> PendingAhead(model::JobId id) override;
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
  StatusOr<PoolReading> ReadPools() override;
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
  StatusOr<CycleRead> SweepAndLoadSnapshot(const PendingWindow& window) override;
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
  // The same in two halves, for the head of a pipeline (decision 0054): the fence's
  // statement and the term it checks (NotLeader when this store holds none; the statement
  // fails with NotLeader when the term has ended, and the server skips what follows it),
  // then `st`, the status of the call that sent it, with the term forgotten when it is
  // NotLeader.
  StatusOr<PgStatement> LeaderFence(std::int64_t* term);
  Status FenceChecked(const Status& st, std::int64_t term);
  // The sweep's first read (decision 0048): whether a live or draining node's lease ran out,
  // and whether this store's term still holds, locking nothing. NotLeader when this store
  // holds no term. SweepDue reads its one row: true when the fenced sweep must run.
  StatusOr<PgStatement> SweepCheck();
  static bool SweepDue(const PgResult& check);
  // The sweep itself, in a transaction behind the leader fence.
  StatusOr<std::vector<LostNode>> SweepFenced();
  // LoadSnapshot's transaction; with `sweep_check` (SweepCheck's statement), that read
  // rides in its first pipeline and `*sweep_due` is set from it.
  StatusOr<model::Snapshot> LoadSnapshotWith(const PendingWindow& window,
                                             const PgStatement* sweep_check, bool* sweep_due);
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
  // Fair share in two halves around one of the snapshot's pipelines: the reads it needs (a
  // fold or a refresh of the base when due, then what ended after the cut), then the usage
  // from their results, in the same order. `open_since_us`: when the oldest other
  // transaction open at the snapshot began.
  struct UsageRead;
  UsageRead PlanTeamUsage(std::int64_t now_us, std::optional<std::int64_t> open_since_us);
  std::map<model::TeamId, double> TeamUsage(const UsageRead& read, const PgResult* results);

  // Owned here, used through the reference: libpq stays out of this header (decision 0042).
  std::unique_ptr<PgPool> pool_owner_;
  PgPool& pool_;
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

}  // namespace frugal::store
