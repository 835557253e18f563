// Polling with a deadline: end-to-end tests wait for real processes this way, never with
// fixed sleeps or timed assertions.
#pragma once

#include <chrono>
#include <functional>
#include <thread>

namespace frugal::testing {

// Calls `done` every `every` until it returns true (then true) or `limit` passes (then the
// last answer).
inline bool WaitFor(const std::function<bool()>& done, std::chrono::seconds limit,
                    std::chrono::milliseconds every = std::chrono::milliseconds(100)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(every);
  }
  return done();
}

}  // namespace frugal::testing
