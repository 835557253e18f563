#include "scheduler/engine/statistics_keeper.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace frugal::engine {

StatusOr<std::vector<std::string>> StatisticsKeeper::RunOnce() {
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto tables, store_.RefreshStatistics());
  if (!tables.empty()) {
    std::string names;
    for (const auto& t : tables) names += (names.empty() ? "" : ",") + t;
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    spdlog::info(R"("event":"statistics_refreshed","tables":"{}","ms":{:.1f})", JsonEscape(names),
                 ms);
  }
  return tables;
}

void StatisticsKeeper::Tick() {
  auto r = RunOnce();
  // One warning per run of failures (a database down for a minute), not one a second.
  if (!r.ok() && !warned_)
    spdlog::warn(R"("event":"statistics_refresh_failed","error":"{}")",
                 JsonEscape(r.status().message()));
  warned_ = !r.ok();
}

}  // namespace frugal::engine
