// Placement policies: pure functions from a Snapshot to a Plan, chosen by name
// ("placement/fifo"). No I/O, no clock, no globals: the same snapshot always gives the
// same plan, and every decision carries a reason a user can read.
//
// A policy decides placement only. The cycle around it (policy/cycle.h, DecideCycle) runs
// the idle guardrail before it and the quotas and hard budgets after it, so a policy may
// ignore those limits and still never exceed them; placement/cost respects them anyway, to
// look elsewhere instead of waiting on a refusal. The store applies the plan as it finds
// the world (CycleStore::ApplyPlan skips what changed since the snapshot), so a plan made from
// a stale snapshot is safe, only late.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy_config.h"

namespace frugal::policy {

class Policy {
 public:
  virtual ~Policy() = default;
  // The name it is registered under, logged with every start ("placement/cost").
  virtual std::string Name() const = 0;
  // The plan for `snapshot`: for each pending job an assignment (a gang: one per node, all
  // of one pool), a wait or a hold, each with its reason; stops of running attempts; node
  // requests and releases for the capacity provider. It fills every part of Plan but
  // `idle_actions` (DecideCycle's). The plan keeps the rules every policy keeps: nodes
  // and pools within capacity, GPU types and memory as asked, no tolerance-none job on
  // spot, nothing new on a node under notice (tests/scheduler/policy/policy_contract_test.cc
  // checks them for every registered policy).
  // Must be deterministic in `snapshot`. Thread-safe (const, no shared state); it may
  // take a second at 100,000 pending jobs on 10,000 nodes, so callers keep it off threads
  // that answer requests.
  virtual model::Plan Decide(const model::Snapshot& snapshot) const = 0;
  // The knobs it was built with. The engine's budget guard prices jobs with them, so the
  // guard and the policy agree on what a job is expected to cost. A policy with no knobs
  // returns the defaults.
  virtual const PolicyConfig& config() const;
};

// The policy registered under `name` ("placement/cost", "placement/fifo"), or
// InvalidArgument listing the known names (the scheduler's config names one; a typo fails
// at start, not at the first cycle). The first form uses the default PolicyConfig;
// placement/fifo has no knobs and ignores `config`.
StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name);
StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const PolicyConfig& config);
// Every registered name (for --help and the error above).
std::vector<std::string> PolicyNames();

}  // namespace frugal::policy
