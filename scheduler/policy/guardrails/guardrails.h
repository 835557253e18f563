// Guardrail decisions (issue 5): pure functions over the values of model/guardrails.h. The
// API applies the submit-time ones (max_runtime per class, approval), the engine the idle
// one each cycle, and the job and cost routes the right-sizing advice. No I/O, no clock.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/money.h"
#include "common/status.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/pool.h"
#include "scheduler/model/snapshot.h"

namespace frugal::policy {

// The spec with its class's max_runtime rules applied: a job without max_runtime gets the
// class default (if any); a job asking above the class maximum is FailedPrecondition (422,
// field max_runtime) naming the maximum.
StatusOr<model::JobSpec> ApplyClassRuntime(model::JobSpec spec,
                                           const model::GuardrailSettings& settings);

// Why the job must wait for an admin's approval, or nullopt. Premium: a GPU type in
// settings.premium_gpu_types; a job that names no types may land on one, so it counts.
std::optional<std::string> ApprovalReason(const model::JobSpec& spec,
                                          const model::GuardrailSettings& settings);

// Idle requeues a job gets; idle again after them, it is stopped.
inline constexpr int kMaxIdleRequeues = 1;

// What to do about each idle attempt: nothing before the window has passed; then a
// warning once, and under a requeue policy a requeue (it has a checkpoint to resume from)
// or a stop (it has none, or it was already requeued kMaxIdleRequeues times for being
// idle). Ordered by attempt id.
std::vector<model::IdleAction> DecideIdle(const model::IdleBatch& batch);

// The idle attempts of a cycle's snapshot, with its settings and now: running attempts with
// an idle_since and no stop order outstanding (a stopping attempt or a cancelled job is
// left alone), in the snapshot's (attempt id) order.
model::IdleBatch IdleBatchOf(const model::Snapshot& snapshot);

struct RightSizing {
  std::string pool;  // the cheapest pool that would have fitted
  std::string gpu_type;
  int gpu_mem_gb = 0;
  int peak_gpu_mem_mb = 0;
  Micros actual = 0;       // the run at its pools' list prices
  Micros alternative = 0;  // the same work on `pool`, at its speed and price
  Micros saving = 0;
  std::string message;  // "peak 11.2 GB fits t4 (16 GB): ... $3.10 instead of $12.40"
};

// Advice for a finished job: the cheapest pool of another GPU type whose memory holds the
// job's peak, where the same work (run time x speed of the pools it ran on, divided by the
// candidate's speed) costs less. Spot is a candidate only for tolerant jobs. nullopt when
// the peak is unknown or nothing is cheaper.
std::optional<RightSizing> AdviseRightSizing(const model::JobUsage& usage,
                                             const std::vector<model::Pool>& pools);

}  // namespace frugal::policy
