// Keeps the store's planner statistics up with bursts (decision 0040): every `interval`
// it asks the store to analyze the tables that changed by more than autovacuum's
// threshold since they were last analyzed. Without it a burst of submits or finishes on a
// young database runs for up to a minute on plans made for nearly empty tables.
// A failed refresh is logged and tried again at the next interval.
//
// Threading: Start/Stop from any thread; refreshes run on the keeper's own thread, on a
// pooled connection of their own, never inside the scheduling cycle.
#pragma once

#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/store/job_store.h"

namespace frugal::engine {

class StatisticsKeeper {
 public:
  // `interval`: time between looks (the first one at Start).
  StatisticsKeeper(store::JobStore& store, std::chrono::milliseconds interval)
      : store_(store), interval_(interval) {}
  ~StatisticsKeeper() { Stop(); }
  StatisticsKeeper(const StatisticsKeeper&) = delete;
  StatisticsKeeper& operator=(const StatisticsKeeper&) = delete;

  void Start();
  void Stop();  // finishes the refresh in progress, then joins

  // One look on the caller's thread; logs the tables it analyzed and how long it took.
  StatusOr<std::vector<std::string>> RunOnce();

 private:
  void Loop();

  store::JobStore& store_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace frugal::engine
