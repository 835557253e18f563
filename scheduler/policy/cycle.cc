#include "scheduler/policy/cycle.h"

#include <unordered_map>
#include <unordered_set>

#include "scheduler/policy/admission/budget.h"
#include "scheduler/policy/guardrails/guardrails.h"
#include "scheduler/policy/admission/quota.h"

namespace frugal::policy {
namespace {

// The idle guardrail's actions, with the attempts they stop marked in the snapshot.
std::vector<model::IdleAction> DecideIdleIn(model::Snapshot& snapshot) {
  const auto batch = IdleBatchOf(snapshot);
  if (batch.attempts.empty()) return {};
  auto actions = DecideIdle(batch);
  if (actions.empty()) return actions;
  std::unordered_map<model::AttemptId, const model::IdleAction*> by_attempt;
  for (const auto& a : actions) by_attempt.emplace(a.attempt_id, &a);
  for (auto& r : snapshot.running) {
    const auto it = by_attempt.find(r.attempt_id);
    if (it == by_attempt.end()) continue;
    r.idle_warned = r.idle_warned || it->second->warn;
    r.stopping = r.stopping || it->second->stop != model::IdleStep::kNone;
  }
  return actions;
}

void DropUnchangedWaits(const model::Snapshot& snapshot, model::Plan& plan) {
  if (plan.waits.empty()) return;
  std::unordered_map<model::JobId, const std::string*> reasons;
  reasons.reserve(snapshot.pending.size());
  for (const auto& j : snapshot.pending) reasons.emplace(j.id, &j.reason);
  std::erase_if(plan.waits, [&](const model::Wait& w) {
    const auto it = reasons.find(w.job_id);
    return it != reasons.end() && *it->second == w.reason;
  });
}

}  // namespace

model::Plan DecideCycle(model::Snapshot& snapshot, const Policy& policy, CycleDepth depth) {
  auto idle = DecideIdleIn(snapshot);
  model::Plan plan = policy.Decide(snapshot);
  plan.idle_actions = std::move(idle);
  // A policy never stops what the guardrail stops already; should one, the first order
  // wins in the store anyway (a stop needs stop_reason IS NULL), so it is dropped here.
  if (!plan.idle_actions.empty() && !plan.stops.empty()) {
    std::unordered_set<model::AttemptId> stopped;
    for (const auto& a : plan.idle_actions) {
      if (a.stop != model::IdleStep::kNone) stopped.insert(a.attempt_id);
    }
    std::erase_if(plan.stops, [&](const model::Stop& s) { return stopped.count(s.attempt_id); });
  }
  if (depth == CycleDepth::kKicked) plan.node_releases.clear();
  EnforceQuotas(snapshot, plan);
  EnforceBudgets(snapshot, plan, policy.config());
  DropUnchangedWaits(snapshot, plan);
  return plan;
}

}  // namespace frugal::policy
