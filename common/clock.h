// Time as the rest of Frugal sees it. Only SystemClock reads the real clock; policy code
// gets `now` from its Snapshot, tests and the simulator use FakeClock.
#pragma once

#include <chrono>
#include <mutex>
#include <string>

#include "common/status.h"

namespace frugal {

using Timestamp = std::chrono::system_clock::time_point;
using Seconds = std::chrono::seconds;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Timestamp Now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Timestamp Now() const override;
};

// Moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Timestamp start) : now_(start) {}
  Timestamp Now() const override;
  void Advance(std::chrono::microseconds by);

 private:
  mutable std::mutex mu_;
  Timestamp now_;  // guarded by mu_
};

// "2026-11-22T18:16:10Z" (UTC, second or microsecond precision). Offsets like +01:00
// are accepted by the parser and converted to UTC. The parser refuses years outside
// 1700..2261, which a Timestamp (int64 nanoseconds since 1970) cannot hold.
std::string FormatRfc3339(Timestamp t);
StatusOr<Timestamp> ParseRfc3339(const std::string& text);

// Durations as people write them: "90", "90s", "15m", "2h30m", "1d12h". Must be > 0
// unless allow_zero.
StatusOr<Seconds> ParseDuration(const std::string& text, bool allow_zero = false);
std::string FormatDuration(Seconds d);

}  // namespace frugal
