// Periodic: runs at Start, again every interval, and never after Stop returns.
#include "common/periodic.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace frugal {
namespace {

TEST(PeriodicTest, RunsAtStartThenEveryIntervalAndNeverAfterStop) {
  std::atomic<int> runs{0};
  Periodic p(std::chrono::milliseconds(1), [&] { ++runs; });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(runs.load(), 0);  // nothing before Start
  p.Start();
  p.Start();  // a second Start starts no second thread
  // Wait for a few runs, with a deadline, not for a time.
  for (int i = 0; i < 5000 && runs.load() < 3; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_GE(runs.load(), 3);
  p.Stop();
  const int after_stop = runs.load();
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(runs.load(), after_stop);
  p.Stop();  // twice is fine
}

TEST(PeriodicTest, StopWakesAWaitInsteadOfSleepingItOut) {
  std::atomic<int> runs{0};
  Periodic p(std::chrono::hours(1), [&] { ++runs; });
  p.Start();
  for (int i = 0; i < 5000 && runs.load() < 1; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(runs.load(), 1);  // the run at Start, then an hour's wait
  p.Stop();                   // returns now: a test that hung here would time out
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace frugal
