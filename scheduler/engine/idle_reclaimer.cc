#include "scheduler/engine/idle_reclaimer.h"

#include <spdlog/spdlog.h>

#include <map>

#include "scheduler/policy/guardrails.h"

namespace frugal::engine {

StatusOr<int> ReclaimIdleGpus(store::JobStore& store, model::Snapshot& snapshot) {
  const auto batch = policy::IdleBatchOf(snapshot);
  if (batch.attempts.empty()) return 0;
  const auto actions = policy::DecideIdle(batch);
  if (actions.empty()) return 0;
  ASSIGN_OR_RETURN(int stops, store.ApplyIdleActions(actions));
  std::map<model::AttemptId, const model::IdleAction*> by_attempt;
  for (const auto& a : actions) {
    by_attempt[a.attempt_id] = &a;
    spdlog::info(R"("event":"idle_gpus","job_id":{},"attempt_id":{},"warn":{},"stop":"{}")",
                 a.job_id, a.attempt_id, a.warn, model::ToString(a.stop));
  }
  // An order the store skipped was skipped because the attempt ended or got another stop
  // order since the snapshot: stopping either way.
  for (auto& r : snapshot.running) {
    auto it = by_attempt.find(r.attempt_id);
    if (it == by_attempt.end()) continue;
    r.idle_warned = r.idle_warned || it->second->warn;
    r.stopping = r.stopping || it->second->stop != model::IdleStep::kNone;
  }
  return stops;
}

}  // namespace frugal::engine
