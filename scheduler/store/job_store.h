// The JobStore port: everything the API and the engine ask of durable state. The
// PostgreSQL adapter (pg/pg_store.h) is the only implementation that knows SQL.
//
// Threading: implementations are thread-safe; HTTP handler threads and the engine's
// strand call them concurrently. Every method is one transaction.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/store/budgets.h"
#include "scheduler/store/dashboard_views.h"
#include "scheduler/store/pool_availability.h"
#include "scheduler/store/store_metrics.h"

namespace frugal::store {

// kMetrics: may read GET /metrics and nothing else (a scraper's token).
// kWorker: a join token: may register nodes (POST /v1/workers/register) and nothing else.
// kNode: a node credential issued by registration: may call the worker routes for that
// node only (decision 0019). Never an API token's role: ParseRole refuses it.
enum class Role { kAdmin, kResearcher, kWorker, kMetrics, kNode };
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
  // Role kNode only: the node the credential belongs to (user holds its name).
  model::NodeId node_id = 0;
};

struct SubmitRequest {
  model::JobSpec spec;
  std::optional<std::string> idempotency_key;
  std::string request_sha256;  // of the canonical body, to tell a retry from a reuse
  // Set: the job starts held, awaiting an admin's approval, with this reason (guardrails).
  std::optional<std::string> approval_reason;
};

struct SubmitResult {
  model::Job job;
  bool created = false;  // false: an earlier submit with the same key
};

// One job of a batch submit (SubmitBatch), in request order.
struct BatchItem {
  model::JobId id = 0;
  bool created = false;  // false: an earlier batch with the same key stored it
  model::JobState state = model::JobState::kPending;
};

constexpr int kMaxArrayTasks = 10000;

// A job array (decision 0026): one spec, run once per index of first..last by step. Each
// task is a job whose env adds FRUGAL_ARRAY_ID and FRUGAL_ARRAY_INDEX.
struct ArrayRequest {
  SubmitRequest task;  // the spec every task shares; its key and hash are the array's
  int first = 0;
  int last = 0;
  int step = 1;
  std::optional<int> max_running;  // at most this many tasks running at once
  // Task i also waits for the task with index i of this array, where it has one.
  std::optional<std::int64_t> after_array_index;
};

// An array as `frugal status --array` shows it: its tasks counted by state, and what the
// sweep has cost so far.
struct ArraySummary {
  std::int64_t id = 0;
  std::string team;
  std::string user;
  std::string name;
  int first = 0;
  int last = 0;
  int step = 1;
  int task_count = 0;
  std::optional<int> max_running;
  Timestamp created_at{};
  std::map<std::string, int> states;  // job state -> tasks in it
  model::JobId first_job = 0;
  model::JobId last_job = 0;
  Micros cost = 0;
  Micros lost = 0;  // of `cost`, the work lost to interruptions
};

struct ArrayResult {
  ArraySummary array;
  bool created = false;  // false: an earlier submit with the same key
};

struct JobFilter {
  std::optional<model::JobState> state;
  std::optional<model::TeamId> visible_team;  // researchers see their own team only
  std::optional<std::string> team;
  std::optional<std::string> user;
  std::optional<std::pair<std::string, std::string>> label;
  std::optional<model::JobId> before;  // cursor: ids below this one
  std::optional<std::int64_t> array;   // the tasks of this job array only
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

// A token as listed: never its secret or its hash.
struct TokenInfo {
  std::int64_t id = 0;
  Role role = Role::kResearcher;
  std::string team;
  std::string user;
  Timestamp created_at{};
  std::optional<Timestamp> revoked_at;
};

// The actor of changes the system makes by itself (start-up tokens, test fixtures).
Principal SystemActor();

// One row of the append-only audit log (migrations/0011_add_audit_log.sql).
struct AuditEntry {
  std::int64_t id = 0;
  Timestamp at{};                        // database time of the change
  std::optional<std::int64_t> token_id;  // empty: no token (bootstrap, system)
  std::string user;
  std::string team;
  std::string action;   // "team.create", "pool.create", "pool.update", "quota.set", ...
  std::string subject;  // "team/vision", "pool/a100-spot", "token/7", ...
  std::string before;   // JSON text; "null" when the subject did not exist
  std::string after;    // JSON text
};

struct AuditFilter {
  std::optional<Timestamp> since;  // at >= since
  std::optional<std::string> action;
  int limit = 100;  // newest first
};

// `frugal admin apply`: the desired state of a cluster (what the file names; anything it
// does not name is left alone: apply never deletes).
struct TeamConfig {
  std::string name;
  std::optional<QuotaSpec> quota;  // empty: the team's quota is left as it is
  std::optional<BudgetSpec> budget;              // empty: left as it is
  std::optional<model::IdlePolicy> idle_policy;  // empty: left as it is
};
struct DesiredState {
  std::vector<model::Pool> pools;
  std::vector<TeamConfig> teams;
  // The whole settings to set (the file's section merged over the current ones by the
  // route, as POST /v1/admin/guardrails does); empty: left as they are.
  std::optional<model::GuardrailSettings> guardrails;
};

// One line of apply's diff. `before`/`after` are JSON text ("null" for created).
struct ConfigChange {
  enum class Kind { kCreated, kUpdated, kUnchanged };
  Kind kind = Kind::kUnchanged;
  std::string subject;  // "pool/NAME", "team/NAME", "quota/TEAM", "budget/TEAM", "guardrails"
  std::string before;
  std::string after;
};
const char* ToString(ConfigChange::Kind k);

// A node as administrators see it (GET /v1/admin/nodes, decision 0021). Times are database
// time; `as_of` is the database's now() when the row was read, for ages.
struct NodeInfo {
  model::NodeId id = 0;
  std::string name;
  std::string pool;
  int gpus = 0;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  // ready: takes work. draining: takes no new work (see `drain`). lost: its lease lapsed
  // (or its state is lost); it takes nothing until its worker registers again.
  std::string state;
  // Why it is draining, when it is: "admin" (an admin drain, cleared only by undrain),
  // "notice" (a spot notice, cleared when the worker reports it withdrawn), "shutdown" (the
  // worker is stopping). An admin drain is reported even on a lost node.
  std::string drain;
  std::optional<std::string> drained_by;
  std::optional<Timestamp> drained_at;
  std::optional<Timestamp> notice_at;
  std::int64_t lease_epoch = 0;
  Timestamp registered_at{};
  std::optional<Timestamp> last_heartbeat_at;
  Timestamp lease_expires_at{};
  int running_attempts = 0;  // active (not yet ended) attempts on the node
  // Mean utilisation (percent) over the GPUs of the last heartbeat's readings; empty when
  // no reading had a number.
  std::optional<double> gpu_utilization;
  std::optional<Timestamp> credential_issued_at;  // migration 0016
  Timestamp as_of{};
};

// A node the lost-node sweep declared lost, and the attempts it ended there.
struct LostNode {
  std::string name;
  std::vector<model::AttemptId> attempts;
  std::vector<model::JobId> jobs;
};

// What TryLeadership found. `term` is the current term in the database whoever holds it
// (0: never taken); `leader` whether this store holds it after the call.
struct LeaderStatus {
  bool leader = false;
  std::int64_t term = 0;
  bool acquired = false;    // this call started a new term held by this store
  std::string lost_reason;  // set when this call ended a term this store held: why
};

// Which pending jobs a snapshot reads (JobStore::LoadSnapshot): per team, its first
// `per_team` that may start and its first `per_team` waiting on a dependency; of all those,
// `max_pending`. Both at least 1.
struct PendingWindow {
  int max_pending = 10000;
  int per_team = 1000;
};

// The error of an engine write refused by the fence (FailedPrecondition "not the leader: ...").
Status NotLeader(const std::string& why);
bool IsNotLeader(const Status& st);

// What ApplyPlan did.
struct AppliedPlan {
  int started = 0;                  // jobs started (a gang counts once)
  int idle_stops = 0;               // idle stop orders written
  std::vector<BudgetAlert> alerts;  // budget alerts recorded by this transaction
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
  // Stores every job of `reqs` in one transaction, or none (decision 0024). Items with an
  // idempotency key that an earlier submit of the same team stored with the same request
  // come back with created=false; with another request, Conflict naming the item.
  virtual StatusOr<std::vector<BatchItem>> SubmitBatch(const Principal& who,
                                                       const std::vector<SubmitRequest>& reqs) = 0;
  // Stores the array and all its tasks in one transaction (decision 0026). A repeated key
  // with the same request returns the earlier array (created=false); with another, Conflict.
  virtual StatusOr<ArrayResult> SubmitArray(const Principal& who, const ArrayRequest& req) = 0;
  // NotFound unless the array exists and `visible_team` (when set) owns it.
  virtual StatusOr<ArraySummary> GetArray(std::int64_t id,
                                          std::optional<model::TeamId> visible_team) = 0;
  // Cancels every task that has not ended, as CancelJob does one; returns how many.
  virtual StatusOr<int> CancelArray(std::int64_t id, std::optional<model::TeamId> visible_team,
                                    const std::string& actor) = 0;
  // Every task of `arrays`, for a dependency on whole arrays (`after_arrays`). NotFound
  // naming an array that does not exist or that `visible_team` cannot see.
  virtual StatusOr<std::vector<model::JobId>> ArrayTasks(
      const std::vector<std::int64_t>& arrays, std::optional<model::TeamId> visible_team) = 0;

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
  // Every mutating admin method takes the `actor` and writes an audit row (who, what,
  // before, after) in the same transaction as the change: a change that rolls back leaves
  // no row. A call that changes nothing writes none. The overloads without an actor act as
  // SystemActor() (start-up and test fixtures).
  virtual StatusOr<Team> CreateTeam(const Principal& actor, const std::string& name) = 0;
  virtual StatusOr<std::vector<Team>> ListTeams() = 0;
  // Replaces `team`'s quota (an empty spec removes it). NotFound for an unknown team,
  // FailedPrecondition (field "pools") for an unknown pool.
  virtual StatusOr<QuotaSpec> SetQuota(const Principal& actor, const std::string& team,
                                       const QuotaSpec& quota) = 0;
  virtual StatusOr<QuotaSpec> GetQuota(const std::string& team) = 0;
  // --- budgets (budgets.h, decision 0010) ---
  // Replaces `team`'s budget. NotFound for an unknown team. Audited (budget.set).
  virtual StatusOr<BudgetSpec> SetBudget(const Principal& actor, const std::string& team,
                                         const BudgetSpec& budget) = 0;
  StatusOr<BudgetSpec> SetBudget(const std::string& team, const BudgetSpec& budget) {
    return SetBudget(SystemActor(), team, budget);
  }
  // NotFound for an unknown team or a team without a budget.
  virtual StatusOr<BudgetSpec> GetBudget(const std::string& team) = 0;
  // The budget's status in the period holding `at` (default: database now), with that
  // period's alerts. NotFound as GetBudget.
  virtual StatusOr<BudgetStatus> GetBudgetStatus(const std::string& team,
                                                 std::optional<Timestamp> at) = 0;
  // Records an alert for every threshold a team has reached in the period holding `at`
  // (default: database now) and not yet recorded: one row per (team, period, threshold),
  // so each fires once even across restarts and schedulers. Returns the new ones. Each
  // cycle's ApplyPlan does this at now, in its own transaction; this form is for a chosen
  // time (a period's end in tests and tools). Leader only, as the engine's writes.
  virtual StatusOr<std::vector<BudgetAlert>> FireBudgetAlerts(std::optional<Timestamp> at) = 0;
  // Claims up to `limit` alerts whose webhook POST is due; a claim is not handed out
  // again for a minute, so concurrent dispatchers do not send one alert twice at once.
  virtual StatusOr<std::vector<AlertDelivery>> ClaimAlertDeliveries(int limit) = 0;
  // Records the outcome of a claimed POST. On failure the alert is retried after
  // `backoff` x 2^(attempt-1), or marked failed after `max_attempts` tries.
  virtual Status RecordAlertDelivery(std::int64_t alert_id, bool delivered,
                                     const std::string& error, int max_attempts,
                                     Seconds backoff) = 0;
  // Creates the user in `team` if new, then a token with the given hash.
  virtual StatusOr<IssuedToken> CreateToken(const Principal& actor, const std::string& team,
                                            const std::string& user, Role role,
                                            const std::string& token_sha256) = 0;
  // Creates team "admin", user "admin" and an admin token, unless an admin token exists
  // (FailedPrecondition: bootstrap runs once). Audited with no token, user "bootstrap".
  virtual StatusOr<IssuedToken> Bootstrap(const std::string& token_sha256) = 0;
  // Every token, newest first, revoked ones included.
  virtual StatusOr<std::vector<TokenInfo>> ListTokens() = 0;
  // Revokes token `id` at once (the next request with it is refused). NotFound for an
  // unknown id; revoking a revoked token changes nothing and returns it.
  virtual StatusOr<TokenInfo> RevokeToken(const Principal& actor, std::int64_t id) = 0;
  virtual StatusOr<std::vector<AuditEntry>> ListAudit(const AuditFilter& filter) = 0;
  // Brings the database to `desired` in one transaction: creates or updates what differs,
  // one audit row per change, all or nothing. With `dry_run` computes the same diff and
  // changes nothing. Errors name the part at fault (field "pools[1]", "teams[0].quota").
  virtual StatusOr<std::vector<ConfigChange>> ApplyConfig(const Principal& actor,
                                                          const DesiredState& desired,
                                                          bool dry_run) = 0;

  // --- capacity (nodes register through WorkerStore) ---
  virtual StatusOr<model::Pool> UpsertPool(const Principal& actor, const model::Pool& pool) = 0;
  virtual StatusOr<std::vector<model::Pool>> ListPools() = 0;

  // SystemActor() conveniences (see above).
  StatusOr<Team> CreateTeam(const std::string& name) { return CreateTeam(SystemActor(), name); }
  StatusOr<QuotaSpec> SetQuota(const std::string& team, const QuotaSpec& quota) {
    return SetQuota(SystemActor(), team, quota);
  }
  StatusOr<IssuedToken> CreateToken(const std::string& team, const std::string& user, Role role,
                                    const std::string& token_sha256) {
    return CreateToken(SystemActor(), team, user, role, token_sha256);
  }
  StatusOr<model::Pool> UpsertPool(const model::Pool& pool) {
    return UpsertPool(SystemActor(), pool);
  }

  // --- spot availability (issue 14, decision 0023; pg_store_availability.cc) ---
  // Replaces the pool's imported evidence with `counts` (an AvailabilityModel in the
  // store's ticks and bins, model::kAvailabilityTickSeconds and kAvailabilityBins, built by
  // the caller from the admin's series) and refits the pool at once. Audited as
  // pool.availability_import, subject "pool/NAME". NotFound for an unknown pool,
  // FailedPrecondition (field "pool") for a pool that is not spot, InvalidArgument for
  // counts of another shape.
  virtual StatusOr<PoolAvailability> ImportAvailability(const Principal& actor,
                                                        const std::string& pool,
                                                        const model::AvailabilityModel& counts,
                                                        const std::string& source) = 0;
  // The pool's evidence, last fit and state now. NotFound for an unknown pool,
  // FailedPrecondition for a pool that is not spot.
  virtual StatusOr<PoolAvailability> GetAvailability(const std::string& pool) = 0;
  // Refits every spot pool: its imported counts plus the spells of its node lives (the
  // one still going on not ended), written as its fitted model. One transaction per pool;
  // slow (reads every node life), so never called from the scheduling cycle.
  virtual StatusOr<std::vector<RefitResult>> RefitAvailability() = 0;
  // Gathers planner statistics (ANALYZE) for each of the store's tables whose rows changed
  // by more than 50 + 10% since its statistics were last gathered, the threshold of
  // PostgreSQL's autovacuum, which looks only once a minute (decision 0040). Returns the
  // tables it analyzed. A table another session is analyzing is skipped. Never called
  // from the scheduling cycle.
  virtual StatusOr<std::vector<std::string>> RefreshStatistics() = 0;

  // --- nodes (decision 0021); each change is audited with `actor`, action node.drain,
  // node.undrain or node.remove, subject "node/NAME". NotFound for an unknown or removed
  // node. ---
  // Every node not removed, by name.
  virtual StatusOr<std::vector<NodeInfo>> ListNodes() = 0;
  // No new placements on the node; its running attempts continue. Already drained by an
  // admin: unchanged, no audit row.
  virtual StatusOr<NodeInfo> DrainNode(const Principal& actor, const std::string& name) = 0;
  // Clears an admin drain (not a spot notice's or a shutdown's). Not drained: unchanged.
  virtual StatusOr<NodeInfo> UndrainNode(const Principal& actor, const std::string& name) = 0;
  // Removes the node from the cluster: it is no longer listed and its credential stops
  // working (a worker still running there must register again with a join token, and then
  // reappears as a new registration). Allowed when its lease is lost (its active attempts
  // end node_lost and their jobs are pending again), or when an admin drained it and no
  // attempt is active on it. Otherwise Conflict, saying which. Returns the node as it was.
  virtual StatusOr<NodeInfo> RemoveNode(const Principal& actor, const std::string& name) = 0;

  // --- engine ---
  // Nodes whose lease (database time) expired become lost; their active attempts end
  // node_lost (or preempted, after a spot notice) and their jobs are pending again with
  // their checkpoints. Returns each node declared lost, with what it ended.
  virtual StatusOr<std::vector<LostNode>> SweepLostNodes() = 0;
  // Leadership is a lease in database time with a fencing term (decision 0020). Renews
  // the lease for `ttl` if this store holds the current term and it has not expired;
  // otherwise takes it with a new term if it has expired (or was never taken). A renewal
  // that finds the term ended, or fails, gives the term up here at once: the engine
  // writes below refuse until a later call takes a new one. Errors are the database's.
  virtual StatusOr<LeaderStatus> TryLeadership(std::chrono::milliseconds ttl) = 0;
  // Ends the lease now if this store holds it (a clean shutdown), so a standby or a
  // restarted scheduler need not wait for it to expire. Ok when it held none.
  virtual Status ReleaseLeadership() = 0;
  // The engine's writes (SweepLostNodes, ApplyPlan, FireBudgetAlerts)
  // check in their own transaction, first, that this store holds the current term and its
  // lease is unexpired (the row stays locked FOR SHARE until commit, so no takeover
  // interleaves). Otherwise they write nothing and return NotLeader(): IsNotLeader().
  // Pending jobs, active attempts (with their idle state and team idle policy), live nodes,
  // pools, quotas, budgets, the idle settings, and the database's now(). The pending jobs
  // are each team's first `window.per_team` in claim order (priority, then id) that may
  // start, and its first `window.per_team` that wait on an open dependency; of those the
  // first `window.max_pending`, every team's first before any team's second, returned in
  // claim order (decision 0035). A team with a deep queue cannot hide another team's jobs
  // from the cycle, and a cycle reads hundreds of rows, not the whole queue.
  virtual StatusOr<model::Snapshot> LoadSnapshot(const PendingWindow& window) = 0;
  // Applies the plan in one transaction, in this order: the idle actions (warning events,
  // once per attempt, and stop orders of kind `idle`), assignments, waits, holds, the
  // policy's stops, and then the budget alerts that teams' spending has reached (one row
  // per team, period and threshold, with its webhook delivery pending; FireBudgetAlerts).
  // What changed since the snapshot is skipped, not refused: an assignment whose job is no
  // longer pending or whose node is no longer live, a wait or hold of a job that is not
  // pending, a stop or idle order for an attempt that ended or already has a stop order.
  // NotLeader (writing nothing) if this store's term ended.
  virtual StatusOr<AppliedPlan> ApplyPlan(const model::Plan& plan) = 0;

  // --- metrics ---
  // The database's figures for GET /metrics, read in one REPEATABLE READ transaction so
  // they agree with each other.
  virtual StatusOr<StoreMetrics> LoadMetrics() = 0;

  // --- dashboard views (dashboard_views.h) ---
  // The latest `limit` attempts that ended preempted or node_lost, newest first, each with
  // the job's next attempt (its recovery) if one started; only `team`'s when set.
  virtual StatusOr<std::vector<Interruption>> RecentInterruptions(
      std::optional<model::TeamId> team, int limit) = 0;
  // A job's attempts (pool, node, cost) and checkpoints. NotFound as GetJob.
  virtual StatusOr<store::JobTimeline> JobTimeline(model::JobId id,
                                                   std::optional<model::TeamId> visible_team) = 0;
  // The timeline in short of each of `ids` that has an attempt (jobs without one are
  // absent), in one query: the jobs list shows a page's pools and costs without one
  // timeline per row. No visibility check: pass ids the caller may see (a ListJobs page).
  virtual StatusOr<std::map<model::JobId, JobSummary>> JobSummaries(
      const std::vector<model::JobId>& ids) = 0;

  // --- guardrails (migrations/0012_add_guardrails.sql, scheduler/model/guardrails.h) ---
  virtual StatusOr<model::GuardrailSettings> GetGuardrails() = 0;
  // Replaces every setting (runtimes: the classes listed; others lose theirs).
  // Audited (guardrails.set), as are the idle policy (team.idle_policy) and approvals
  // (job.approve); the overloads without an actor act as SystemActor().
  virtual StatusOr<model::GuardrailSettings> SetGuardrails(const Principal& actor,
                                                           const model::GuardrailSettings& s) = 0;
  StatusOr<model::GuardrailSettings> SetGuardrails(const model::GuardrailSettings& s) {
    return SetGuardrails(SystemActor(), s);
  }
  // NotFound for an unknown team.
  virtual StatusOr<model::IdlePolicy> GetTeamIdlePolicy(const std::string& team) = 0;
  virtual StatusOr<model::IdlePolicy> SetTeamIdlePolicy(const Principal& actor,
                                                        const std::string& team,
                                                        model::IdlePolicy policy) = 0;
  StatusOr<model::IdlePolicy> SetTeamIdlePolicy(const std::string& team, model::IdlePolicy policy) {
    return SetTeamIdlePolicy(SystemActor(), team, policy);
  }
  // Releases a job held for approval to pending (event `approved` by `actor`). NotFound for
  // an unknown job; Conflict if it is not awaiting approval (never held, approved or ended).
  virtual StatusOr<model::Job> ApproveJob(const Principal& actor, model::JobId id) = 0;
  StatusOr<model::Job> ApproveJob(model::JobId id, const std::string& user) {
    Principal p = SystemActor();
    p.user = user;
    return ApproveJob(p, id);
  }
};

}  // namespace frugal::store
