// What one scheduling cycle sees (Snapshot) and what it decides (Plan). Decide() maps one
// to the other with no I/O; the engine loads the snapshot and applies the plan.
// Fields added for placement/cost (issue 4) all have defaults and come after the older ones,
// so positional initialisers elsewhere keep compiling and older loaders stay meaningful.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/budget.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"

namespace frugal::model {

// A pending job as the policy needs it (a subset of Job, cheap to load in bulk).
struct PendingJob {
  JobId id = 0;
  TeamId team_id = 0;
  int gpus = 1;   // in all
  int nodes = 1;  // > 1: a gang on exactly this many nodes, gpus / nodes each
  std::vector<std::string> gpu_types;
  std::optional<int> min_gpu_mem_gb;
  int priority_rank = 2;  // 0 = highest class
  Tolerance tolerance = Tolerance::kRestartable;
  std::optional<Timestamp> deadline;
  Timestamp created_at{};
  std::string reason;  // the reason currently stored, so unchanged reasons are not rewritten
  std::vector<JobId> waiting_for;          // dependencies that have not ended yet
  std::optional<JobId> failed_dependency;  // a dependency that ended without success
  std::optional<Seconds> estimate{};  // run time on a speed-1.0 GPU from the start; empty = unknown
  std::optional<Seconds> checkpoint_interval{};  // wall time between checkpoints (checkpointed)
  double progress = 0;  // 0..1 from the latest committed checkpoint: where the next run resumes
};

// An active attempt occupying GPUs on a node. A gang spread over several nodes has one
// entry per node, all with the same job_id.
struct RunningAttempt {
  AttemptId attempt_id = 0;
  JobId job_id = 0;
  NodeId node_id = 0;
  int gpus = 0;
  int gang_size = 1;  // > 1: one part of a multi-node gang (the job's nodes)
  int priority_rank = 2;
  PoolId pool_id = 0;                             // the node's pool
  TeamId team_id = 0;                             // the job's team, for quotas
  Timestamp started_at{};                         // when this attempt started
  std::optional<Timestamp> last_checkpoint_at{};  // latest committed checkpoint of the job
  double progress = 0;                            // 0..1 at that checkpoint
  Tolerance tolerance = Tolerance::kRestartable;
  std::optional<Timestamp> deadline{};
  std::optional<Seconds> estimate{};             // the job's run time on a speed-1.0 GPU
  std::optional<Seconds> checkpoint_interval{};  // the job's wall time between checkpoints
  std::vector<std::string> gpu_types{};  // the job's allowed types (empty = any), for migration
  std::optional<int> min_gpu_mem_gb{};   // the job's minimum GPU memory, for migration
  // When the job was last stopped by priority preemption: not again before a newer checkpoint.
  std::optional<Timestamp> last_priority_preemption_at{};
  bool stopping = false;  // a stop order (preemption, migration, cancel) is outstanding
  // Its class's protection from priority preemption (priority_class_runtimes); unset: the
  // policy's PolicyConfig::min_run_time.
  std::optional<Seconds> min_run_time{};
  // Idle GPU guardrail (decision 0012), read by DecideCycle's idle step (policy/cycle.h):
  std::string node_name{};                // the node, named in the idle message
  std::optional<Timestamp> idle_since{};  // every GPU under the threshold since (database time)
  bool idle_warned = false;               // its idle warning was already written
  IdlePolicy idle_policy = IdlePolicy::kWarn;  // the job's team's
  int idle_requeues = 0;                       // times the job was requeued for idle GPUs
};

// A team's GPU-hours, already decayed to `as_of`; the policy decays them on to `now`.
struct TeamUsage {
  double gpu_hours = 0;
  Timestamp as_of{};
};

// A team's quota: most GPUs it may hold at once, per capacity kind and per pool (a missing
// entry is no limit). Both apply: a job needs room under its pool's kind and the pool.
struct TeamQuota {
  std::map<CapacityKind, int> by_kind;
  std::map<PoolId, int> by_pool;
};

struct Snapshot {
  Timestamp now{};                  // database time at load; the only clock policy code sees
  std::vector<PendingJob> pending;  // ordered by (priority_rank, id)
  std::vector<RunningAttempt> running;
  std::vector<Node> nodes;  // live nodes only (lease not expired)
  std::vector<Pool> pools;
  std::map<TeamId, TeamUsage> team_usage{};  // fair share input; missing team = no usage
  std::map<TeamId, double> team_shares{};    // fair share weights; missing team = 1.0
  std::map<TeamId, TeamQuota> quotas{};      // missing team = no quota
  std::map<TeamId, TeamBudget> budgets{};    // missing team = no budget
  // Idle reclamation settings (guardrail_settings): idle is every GPU of an attempt under
  // idle_threshold_percent; reclaimed after idle_window.
  int idle_threshold_percent = 5;
  Seconds idle_window{1800};
};

// Start `job_id` on `node_id` with `gpus` GPUs. A gang spread over nodes (all of one pool)
// is several assignments with the same job_id: apply all of them or none.
struct Assignment {
  JobId job_id = 0;
  NodeId node_id = 0;
  int gpus = 0;
  std::string reason;
  Micros expected_cost = 0;  // expected charge of the whole run on this pool (this part's share)
};

// Leave `job_id` waiting, with the reason shown to its owner.
struct Wait {
  JobId job_id = 0;
  std::string reason;
};

enum class StopKind { kPriorityPreemption, kMigrateOffSpot, kMigrateToSpot };

inline const char* ToString(StopKind k) {
  switch (k) {
    case StopKind::kPriorityPreemption:
      return "priority_preemption";
    case StopKind::kMigrateOffSpot:
      return "migrate_off_spot";
    case StopKind::kMigrateToSpot:
      return "migrate_to_spot";
  }
  return "priority_preemption";
}

// Stop a running attempt (the worker signals it to checkpoint, then ends it); the job goes
// back to pending and resumes from its latest checkpoint.
struct Stop {
  AttemptId attempt_id = 0;
  JobId job_id = 0;
  StopKind kind = StopKind::kPriorityPreemption;
  std::string reason;
};

// Ask the pool's provider for `gpus` more GPUs (it rounds up to whole nodes).
struct NodeRequest {
  PoolId pool_id = 0;
  int gpus = 0;
  std::string reason;
  // The waiting jobs the GPUs are for, in plan order, so admission limits (hard budgets) can
  // shrink the request by the jobs they hold. Empty when the policy does not say; the budget
  // guard then judges the request by the jobs that could use the pool (decision 0016).
  std::vector<JobId> job_ids{};
};

// Give an idle node back to its provider.
struct NodeRelease {
  NodeId node_id = 0;
  std::string reason;
};

// Everything one cycle decides, applied in one transaction (CycleStore::ApplyPlan) and then
// by the capacity provider (requests and releases). policy::DecideCycle makes it whole;
// a Policy's Decide fills all but `idle_actions`.
struct Plan {
  std::vector<Assignment> assignments;
  std::vector<Wait> waits;
  std::vector<Wait> holds;  // jobs that can never run (a dependency failed): held with the reason
  std::vector<Stop> stops{};
  std::vector<NodeRequest> node_requests{};
  std::vector<NodeRelease> node_releases{};
  // The idle guardrail's warnings and stop orders (policy::DecideIdle). The policy saw those
  // attempts as stopping already, so no other stop in the plan names them.
  std::vector<IdleAction> idle_actions{};
};

}  // namespace frugal::model
