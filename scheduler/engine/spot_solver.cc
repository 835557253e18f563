#include "scheduler/engine/spot_solver.h"

#include <spdlog/spdlog.h>

namespace frugal::engine {

void SpotSolver::Start() {
  if (!book_ || thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void SpotSolver::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void SpotSolver::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, interval_, [this] { return stop_; });
    if (stop_) break;
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    const int solved = book_->SolvePending();
    if (solved > 0) {
      const double ms = std::chrono::duration<double, std::milli>(
                            std::chrono::steady_clock::now() - t0).count();
      spdlog::info(R"("event":"spot_tables_solved","tables":{},"ms":{:.0f},"held":{})", solved, ms,
                   book_->tables());
    }
    lock.lock();
  }
}

}  // namespace frugal::engine
