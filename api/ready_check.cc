#include "api/ready_check.h"

namespace frugal::api {

ReadyCheck::ReadyCheck(std::function<Status()> ping, std::chrono::milliseconds wait)
    : ping_(std::move(ping)), wait_(wait), thread_([this] { Loop(); }) {}

ReadyCheck::~ReadyCheck() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

Status ReadyCheck::Check() {
  std::unique_lock<std::mutex> lock(mu_);
  // A ping already in flight began before this call: its answer may be stale, so wait for
  // the one after it (which the loop starts as soon as the current one ends).
  const std::uint64_t need = started_ + 1;
  wanted_ = true;
  cv_.notify_all();
  if (!cv_.wait_for(lock, wait_, [&] { return finished_ >= need; })) {
    return Unavailable("database did not answer within " + std::to_string(wait_.count()) +
                       " ms");
  }
  return last_;
}

void ReadyCheck::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return wanted_ || stop_; });
    if (stop_) return;
    wanted_ = false;
    ++started_;
    lock.unlock();
    Status st = ping_();
    lock.lock();
    last_ = std::move(st);
    ++finished_;
    cv_.notify_all();
  }
}

}  // namespace frugal::api
