// Placement policies: pure functions from a Snapshot to a Plan, chosen by name
// ("placement/fifo"). No I/O, no clock, no globals: the same snapshot always gives the
// same plan, and every decision carries a reason a user can read.
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
  virtual std::string Name() const = 0;
  // Must be deterministic in `snapshot`. Thread-safe (const, no shared state).
  virtual model::Plan Decide(const model::Snapshot& snapshot) const = 0;
  // The knobs it was built with. The engine's budget guard prices jobs with them, so the
  // guard and the policy agree on what a job is expected to cost. A policy with no knobs
  // returns the defaults.
  virtual const PolicyConfig& config() const;
};

// The policy registered under `name` ("placement/cost", "placement/fifo"), or
// InvalidArgument listing the known names. The first form uses the default PolicyConfig;
// placement/fifo has no knobs and ignores `config`.
StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name);
StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const PolicyConfig& config);
std::vector<std::string> PolicyNames();

}  // namespace frugal::policy
