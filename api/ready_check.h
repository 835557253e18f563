// /readyz's database check (issue 15): at most one ping in flight, on its own thread, and
// no caller waits longer than a short bound for it. A hung PostgreSQL therefore turns
// readiness to 503 within that bound instead of hanging the probe, and a storm of probes
// never piles pings onto a database that is already not answering.
//
// Threading: Check() is thread-safe; the ping runs on the object's own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>

#include "common/status.h"

namespace frugal::api {

class ReadyCheck {
 public:
  ReadyCheck(std::function<Status()> ping, std::chrono::milliseconds wait);
  // Joins the ping thread: a ping in flight ends by the store's own client deadline.
  ~ReadyCheck();

  // The result of a ping that ended after this call began (starting one if none is in
  // flight), or Unavailable if none ended within `wait`.
  Status Check();

 private:
  void Loop();

  const std::function<Status()> ping_;
  const std::chrono::milliseconds wait_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool wanted_ = false;         // guarded by mu_: a caller waits for a fresh ping
  bool stop_ = false;           // guarded by mu_
  std::uint64_t finished_ = 0;  // guarded by mu_: pings completed so far
  std::uint64_t started_ = 0;   // guarded by mu_: pings begun so far
  Status last_;                 // guarded by mu_
  std::thread thread_;          // last: starts after the members above exist
};

}  // namespace frugal::api
