#include "scheduler/engine/availability_refitter.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace frugal::engine {

void AvailabilityRefitter::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void AvailabilityRefitter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::vector<store::RefitResult>> AvailabilityRefitter::RunOnce() {
  ASSIGN_OR_RETURN(auto results, store_.RefitAvailability());
  for (const auto& r : results) {
    spdlog::info(
        R"("event":"availability_refit","pool":"{}","lives":{},"observed_ticks":{},"ms":{:.2f})",
        JsonEscape(r.pool), r.lives, r.observed_ticks, r.elapsed_ms);
  }
  return results;
}

void AvailabilityRefitter::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    if (auto r = RunOnce(); !r.ok()) {
      spdlog::warn(R"("event":"availability_refit_failed","error":"{}")",
                   JsonEscape(r.status().message()));
    }
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace frugal::engine
