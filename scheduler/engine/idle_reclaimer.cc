#include "scheduler/engine/idle_reclaimer.h"

#include <spdlog/spdlog.h>

#include "scheduler/policy/guardrails.h"

namespace frugal::engine {

StatusOr<int> ReclaimIdleGpus(store::JobStore& store) {
  ASSIGN_OR_RETURN(auto batch, store.LoadIdleAttempts());
  if (batch.attempts.empty()) return 0;
  const auto actions = policy::DecideIdle(batch);
  if (actions.empty()) return 0;
  ASSIGN_OR_RETURN(int stops, store.ApplyIdleActions(actions));
  for (const auto& a : actions) {
    spdlog::info(R"("event":"idle_gpus","job_id":{},"attempt_id":{},"warn":{},"stop":"{}")",
                 a.job_id, a.attempt_id, a.warn, model::ToString(a.stop));
  }
  return stops;
}

}  // namespace frugal::engine
