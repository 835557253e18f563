// Refits every spot pool's availability model in the background (issue 14, decision
// 0023): every `interval` it asks the store to fit each spot pool's chain from its node
// lives and imported history, so the scheduling cycle only ever reads a fitted model.
// A failed refit is logged and tried again at the next interval; the last good fit stays.
//
// Threading: Start/Stop from one thread; refits run on the refitter's own thread.
#pragma once

#include <vector>

#include "common/clock.h"
#include "common/periodic.h"
#include "common/status.h"
#include "scheduler/store/keeper_store.h"

namespace frugal::engine {

class AvailabilityRefitter {
 public:
  // `interval`: time between refits (the first one runs at Start).
  AvailabilityRefitter(store::KeeperStore& store, Seconds interval)
      : store_(store),
        thread_(std::chrono::duration_cast<std::chrono::milliseconds>(interval),
                [this] { Tick(); }) {}

  void Start() { thread_.Start(); }
  void Stop() { thread_.Stop(); }  // finishes the refit in progress, then joins

  // One refit of every spot pool on the caller's thread, logged per pool (lives read,
  // ticks observed, milliseconds). For tests and the thread's loop.
  StatusOr<std::vector<store::RefitResult>> RunOnce();

 private:
  void Tick();

  store::KeeperStore& store_;
  Periodic thread_;  // last: stopped (joined) before the members it uses go
};

}  // namespace frugal::engine
