#include "scheduler/engine/spot_solver.h"

#include <spdlog/spdlog.h>

namespace frugal::engine {

void SpotSolver::Tick() {
  const auto t0 = std::chrono::steady_clock::now();
  const int solved = book_->SolvePending();
  if (solved > 0) {
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    spdlog::info(R"("event":"spot_tables_solved","tables":{},"ms":{:.0f},"held":{})", solved, ms,
                 book_->tables());
  }
}

}  // namespace frugal::engine
