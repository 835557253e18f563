#include "scheduler/engine/statistics_keeper.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace frugal::engine {

void StatisticsKeeper::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void StatisticsKeeper::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

StatusOr<std::vector<std::string>> StatisticsKeeper::RunOnce() {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto tables, store_.RefreshStatistics());
  if (!tables.empty()) {
    std::string names;
    for (const auto& t : tables) names += (names.empty() ? "" : ",") + t;
    const double ms = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start).count();
    spdlog::info(R"("event":"statistics_refreshed","tables":"{}","ms":{:.1f})", JsonEscape(names),
                 ms);
  }
  return tables;
}

void StatisticsKeeper::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  bool warned = false;  // one warning per run of failures, not one per second
  while (!stopping_) {
    lock.unlock();
    if (auto r = RunOnce(); !r.ok()) {
      if (!warned)
        spdlog::warn(R"("event":"statistics_refresh_failed","error":"{}")",
                     JsonEscape(r.status().message()));
      warned = true;
    } else {
      warned = false;
    }
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace frugal::engine
