// Keeps the store's planner statistics up with bursts (decision 0040): every `interval`
// it asks the store to analyze the tables that changed by more than autovacuum's
// threshold since they were last analyzed. Without it a burst of submits or finishes on a
// young database runs for up to a minute on plans made for nearly empty tables.
// A failed refresh is logged (once per run of failures) and tried again at the next
// interval.
//
// Threading: Start/Stop from one thread; refreshes run on the keeper's own thread, on a
// pooled connection of their own, never inside the scheduling cycle.
#pragma once

#include <string>
#include <vector>

#include "common/periodic.h"
#include "common/status.h"
#include "scheduler/store/keeper_store.h"

namespace frugal::engine {

class StatisticsKeeper {
 public:
  // `interval`: time between looks (the first one at Start).
  StatisticsKeeper(store::KeeperStore& store, std::chrono::milliseconds interval)
      : store_(store), thread_(interval, [this] { Tick(); }) {}

  void Start() { thread_.Start(); }
  void Stop() { thread_.Stop(); }  // finishes the refresh in progress, then joins

  // One look on the caller's thread; logs the tables it analyzed and how long it took.
  StatusOr<std::vector<std::string>> RunOnce();

 private:
  void Tick();

  store::KeeperStore& store_;
  bool warned_ = false;  // only the keeper's thread touches it
  Periodic thread_;      // last: stopped (joined) before the members it uses go
};

}  // namespace frugal::engine
