// Builders for policy snapshots and the plan invariants every policy must keep (used by
// the contract suite, the scenario tests and the randomised property test).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "scheduler/model/snapshot.h"

namespace frugal::policy::testing {

using namespace std::chrono_literals;

// A fixed "now" so tests read as arithmetic: 2026-01-01T00:00:00Z.
Timestamp T0();
Timestamp At(Seconds offset);  // T0() + offset

model::Pool MakePool(model::PoolId id, const std::string& name, model::CapacityKind kind,
                     const std::string& type = "a100", double price_dollars = 3.0,
                     double speed = 1.0, int mem = 80, int max_gpus = 0);
model::Node MakeNode(model::NodeId id, model::PoolId pool, int gpus,
                     const std::string& type = "a100", int mem = 80);
model::PendingJob MakeJob(model::JobId id, int gpus, int rank = 2,
                          model::Tolerance tolerance = model::Tolerance::kRestartable);
model::RunningAttempt MakeRunning(model::AttemptId attempt, model::JobId job, model::NodeId node,
                                  int gpus, int rank = 2);

// Every violation of the rules all policies keep, one line each (empty: none):
// decisions for each pending job, gangs whole and in one pool, node and pool capacity,
// types, no tolerance-none job on spot, nothing on nodes under notice, reasons present,
// well-formed stops, requests and releases.
std::vector<std::string> PlanViolations(const model::Snapshot& s, const model::Plan& plan);

// Field-by-field equality (reasons included), for determinism checks.
bool SamePlan(const model::Plan& a, const model::Plan& b);

// The assignments of one job (a gang may have several).
std::vector<model::Assignment> AssignmentsOf(const model::Plan& plan, model::JobId job);
const model::Wait* WaitOf(const model::Plan& plan, model::JobId job);

}  // namespace frugal::policy::testing
