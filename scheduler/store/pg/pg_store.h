// PostgreSQL adapter of the JobStore port. Every method runs as one transaction on a
// pooled connection; the leader lock lives on one dedicated session.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "scheduler/store/cost_store.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/worker_store.h"
#include "scheduler/store/pg/pg_conn.h"

namespace frugal::store {

class PgStore final : public JobStore, public WorkerStore, public CostStore {
 public:
  // `conninfo` is a libpq connection string or URL; the schema must be migrated already.
  PgStore(std::string conninfo, int pool_size);

  Status Ping() override;
  StatusOr<Principal> Authenticate(const std::string& token_sha256) override;
  StatusOr<SubmitResult> Submit(const Principal& who, const SubmitRequest& req) override;
  StatusOr<JobPage> ListJobs(const JobFilter& filter) override;
  StatusOr<JobDetail> GetJob(model::JobId id, std::optional<model::TeamId> visible_team) override;
  StatusOr<model::Job> CancelJob(model::JobId id, std::optional<model::TeamId> visible_team,
                                 const std::string& actor) override;

  StatusOr<Team> CreateTeam(const std::string& name) override;
  StatusOr<std::vector<Team>> ListTeams() override;
  StatusOr<QuotaSpec> SetQuota(const std::string& team, const QuotaSpec& quota) override;
  StatusOr<QuotaSpec> GetQuota(const std::string& team) override;
  StatusOr<IssuedToken> CreateToken(const std::string& team, const std::string& user, Role role,
                                    const std::string& token_sha256) override;
  StatusOr<IssuedToken> Bootstrap(const std::string& token_sha256) override;

  StatusOr<model::Pool> UpsertPool(const model::Pool& pool) override;
  StatusOr<std::vector<model::Pool>> ListPools() override;

  StatusOr<int> SweepLostNodes() override;
  StatusOr<bool> TryLeadership() override;
  StatusOr<model::Snapshot> LoadSnapshot(int max_pending) override;
  StatusOr<int> ApplyPlan(const model::Plan& plan) override;
  StatusOr<StoreMetrics> LoadMetrics() override;  // pg_store_metrics.cc

  StatusOr<Registration> RegisterWorker(const model::Node& node, const std::string& pool_name,
                                        Seconds lease_ttl) override;
  StatusOr<HeartbeatReply> Heartbeat(const HeartbeatRequest& req, Seconds lease_ttl) override;
  Status CommitCheckpoint(const CheckpointReport& report) override;
  Status AppendLog(model::AttemptId attempt, std::int64_t lease_epoch, const std::string& data,
                   std::int64_t cap_bytes) override;
  StatusOr<model::Job> FinishAttempt(model::AttemptId attempt, std::int64_t lease_epoch,
                                     Outcome outcome, std::optional<int> exit_code) override;
  StatusOr<std::vector<LogChunk>> ReadLogs(model::JobId job,
                                           std::optional<model::TeamId> visible_team,
                                           std::int64_t after_seq, int limit) override;

  StatusOr<CostReport> Cost(const CostQuery& query) override;

 private:
  PgPool pool_;
  std::mutex leader_mu_;
  std::unique_ptr<PgConn> leader_conn_;  // guarded by leader_mu_; holds the session lock
  bool leader_ = false;                  // guarded by leader_mu_
};

// --- helpers shared by the pg_store_*.cc files ---
namespace pg {
// SQL expression: a timestamptz column as integer microseconds since the epoch.
#define FRUGAL_US(col) "(extract(epoch from " col ") * 1000000)::bigint"
Timestamp FromMicros(std::int64_t us);
std::optional<Timestamp> OptTime(const PgResult& r, int row, int col);
std::string ToMicrosParam(Timestamp t);
// A timestamptz parameter (RFC 3339 text, microseconds).
std::string ToTimeParam(Timestamp t);
// Writes the ledger entries of every ended, unbilled attempt. Call in the transaction
// that ends attempts, so an attempt is never ended without its cost.
StatusOr<int> BillEndedAttempts(PgConn& c);
// Every team's quota, by pool id, for the snapshot.
StatusOr<std::map<model::TeamId, model::TeamQuota>> LoadQuotas(PgConn& c);
// Columns of a job row (joined with teams t and users u), and its parser.
extern const char* const kJobColumns;
constexpr int kJobColumnCount = 31;
// Parses a job whose kJobColumns start at column `first`.
model::Job ParseJob(const PgResult& r, int row, int first = 0);
StatusOr<std::vector<model::Pool>> LoadPools(PgConn& c);
}  // namespace pg

}  // namespace frugal::store
