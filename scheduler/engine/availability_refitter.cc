#include "scheduler/engine/availability_refitter.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace frugal::engine {

StatusOr<std::vector<store::RefitResult>> AvailabilityRefitter::RunOnce() {
  ASSIGN_OR_RETURN(auto results, store_.RefitAvailability());
  for (const auto& r : results) {
    spdlog::info(
        R"("event":"availability_refit","pool":"{}","lives":{},"observed_ticks":{},"ms":{:.2f})",
        JsonEscape(r.pool), r.lives, r.observed_ticks, r.elapsed_ms);
  }
  return results;
}

void AvailabilityRefitter::Tick() {
  if (auto r = RunOnce(); !r.ok()) {
    spdlog::warn(R"("event":"availability_refit_failed","error":"{}")",
                 JsonEscape(r.status().message()));
  }
}

}  // namespace frugal::engine
