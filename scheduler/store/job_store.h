// The JobStore port: everything the API and the engine ask of durable state. The
// PostgreSQL adapter (pg/pg_store.h) is the only implementation that knows SQL.
//
// Threading: implementations are thread-safe; HTTP handler threads and the engine's
// strand call them concurrently. Every method is one transaction.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/store/store_metrics.h"

namespace frugal::store {

// kMetrics: may read GET /metrics and nothing else (a scraper's token).
enum class Role { kAdmin, kResearcher, kWorker, kMetrics };
const char* ToString(Role r);
StatusOr<Role> ParseRole(const std::string& s);

// Who is calling, resolved from a bearer token.
struct Principal {
  std::int64_t token_id = 0;
  Role role = Role::kResearcher;
  model::TeamId team_id = 0;
  std::string team;
  model::UserId user_id = 0;
  std::string user;
};

struct SubmitRequest {
  model::JobSpec spec;
  std::optional<std::string> idempotency_key;
  std::string request_sha256;  // of the canonical body, to tell a retry from a reuse
};

struct SubmitResult {
  model::Job job;
  bool created = false;  // false: an earlier submit with the same key
};

struct JobFilter {
  std::optional<model::JobState> state;
  std::optional<model::TeamId> visible_team;  // researchers see their own team only
  std::optional<std::string> team;
  std::optional<std::string> user;
  std::optional<std::pair<std::string, std::string>> label;
  std::optional<model::JobId> before;  // cursor: ids below this one
  int limit = 50;
};

struct JobPage {
  std::vector<model::Job> jobs;  // newest first
  std::optional<model::JobId> next_cursor;
};

struct JobDetail {
  model::Job job;
  std::vector<model::Attempt> attempts;
  std::optional<model::Checkpoint> latest_checkpoint;
  std::vector<model::JobEvent> events;
};

struct Team {
  model::TeamId id = 0;
  std::string name;
};

// A team's quota as admins write it: GPUs per capacity kind and per pool (by name).
struct QuotaSpec {
  std::map<model::CapacityKind, int> by_kind;
  std::map<std::string, int> by_pool;
};

struct IssuedToken {
  std::int64_t id = 0;
  Role role = Role::kResearcher;
  std::string team;
  std::string user;
};

class JobStore {
 public:
  virtual ~JobStore() = default;

  // Readiness: Unavailable when the database cannot be reached.
  virtual Status Ping() = 0;

  // The active (not revoked) token with this SHA-256, or Unauthenticated.
  virtual StatusOr<Principal> Authenticate(const std::string& token_sha256) = 0;

  // Inserts the job (state pending) and its `submitted` event. With an idempotency key
  // seen before in the team: the earlier job if the request hash matches, else Conflict.
  // Dependencies must name existing jobs the caller can see (FailedPrecondition).
  virtual StatusOr<SubmitResult> Submit(const Principal& who, const SubmitRequest& req) = 0;

  virtual StatusOr<JobPage> ListJobs(const JobFilter& filter) = 0;

  // NotFound if the job does not exist or is not in `visible_team` (when set).
  virtual StatusOr<JobDetail> GetJob(model::JobId id,
                                     std::optional<model::TeamId> visible_team) = 0;

  // Pending/held jobs end `cancelled` at once; running ones get cancel_requested (the
  // worker stops them). Conflict if the job has already ended.
  virtual StatusOr<model::Job> CancelJob(model::JobId id,
                                         std::optional<model::TeamId> visible_team,
                                         const std::string& actor) = 0;

  // --- admin ---
  virtual StatusOr<Team> CreateTeam(const std::string& name) = 0;
  virtual StatusOr<std::vector<Team>> ListTeams() = 0;
  // Replaces `team`'s quota (an empty spec removes it). NotFound for an unknown team,
  // FailedPrecondition (field "pools") for an unknown pool.
  virtual StatusOr<QuotaSpec> SetQuota(const std::string& team, const QuotaSpec& quota) = 0;
  virtual StatusOr<QuotaSpec> GetQuota(const std::string& team) = 0;
  // Creates the user in `team` if new, then a token with the given hash.
  virtual StatusOr<IssuedToken> CreateToken(const std::string& team, const std::string& user,
                                            Role role, const std::string& token_sha256) = 0;
  // Creates team "admin", user "admin" and an admin token, unless an admin token exists
  // (FailedPrecondition: bootstrap runs once).
  virtual StatusOr<IssuedToken> Bootstrap(const std::string& token_sha256) = 0;

  // --- capacity (nodes register through WorkerStore) ---
  virtual StatusOr<model::Pool> UpsertPool(const model::Pool& pool) = 0;
  virtual StatusOr<std::vector<model::Pool>> ListPools() = 0;

  // --- engine ---
  // Nodes whose lease (database time) expired become lost; their active attempts end
  // node_lost and their jobs are pending again with their checkpoints. Returns how many
  // attempts were ended.
  virtual StatusOr<int> SweepLostNodes() = 0;
  // True while this store's dedicated session holds the scheduler leader lock.
  virtual StatusOr<bool> TryLeadership() = 0;
  // Pending jobs (at most `max_pending`, in claim order), active attempts, live nodes,
  // pools, and the database's now().
  virtual StatusOr<model::Snapshot> LoadSnapshot(int max_pending) = 0;
  // Applies the plan in one transaction. Assignments whose job is no longer pending are
  // skipped (the plan was made from an older snapshot); returns how many started.
  virtual StatusOr<int> ApplyPlan(const model::Plan& plan) = 0;

  // --- metrics ---
  // The database's figures for GET /metrics, read in one REPEATABLE READ transaction so
  // they agree with each other.
  virtual StatusOr<StoreMetrics> LoadMetrics() = 0;
};

}  // namespace frugal::store
