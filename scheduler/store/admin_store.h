// The AdminStore port: what administrators change and read (teams, quotas, budgets,
// tokens, the audit log, `admin apply`, pools and their availability evidence, nodes,
// guardrails, idle policies, approvals). The admin routes and the CLI's admin commands use
// it through JobStore (job_store.h).
//
// Every mutating method takes the `actor` and writes an audit row (who, what, before,
// after) in the same transaction as the change: a change that rolls back leaves no row, and
// a call that changes nothing writes none. The overloads without an actor act as
// SystemActor() (start-up and test fixtures).
//
// Threading: implementations are thread-safe. Every method is one transaction. Errors:
// NotFound for an unknown team, pool, node or job; InvalidArgument / FailedPrecondition
// naming the field for a value that cannot be stored; Conflict for a state that forbids it;
// Unavailable when the database is out of reach.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/availability.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"
#include "scheduler/store/budgets.h"
#include "scheduler/store/pool_availability.h"
#include "scheduler/store/principal.h"

namespace frugal::store {

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

// The pools and the database's now() as one read saw them (AdminStore::ReadPools).
struct PoolReading {
  std::vector<model::Pool> pools;
  Timestamp now{};
};

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

class AdminStore {
 public:
  virtual ~AdminStore() = default;

  // --- teams and quotas ---
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
  // The pools as ListPools returns them and the database's now(), read in one transaction:
  // what admission quotes against, in the clock the engine decides by (decision 0043), so
  // a scheduler host whose clock drifts admits by the same time it schedules by.
  virtual StatusOr<PoolReading> ReadPools() = 0;

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
