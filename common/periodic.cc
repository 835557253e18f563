#include "common/periodic.h"

namespace frugal {

void Periodic::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void Periodic::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Periodic::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    task_();
    lock.lock();
    cv_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace frugal
