// Solves the learned spot controller's tables off the cycle (issue 14, decision 0023).
// Decide queues a table it lacks (policy::SpotBook) and decides that job by the rules of
// decisions 0014/0015 meanwhile; this thread solves what is queued, one to three seconds of
// one core per table, so the next cycles decide by the model. Logs each batch it solves.
// Thread-safety: Start and Stop from one thread; the book is internally synchronised.
#pragma once

#include <memory>

#include "common/periodic.h"
#include "scheduler/policy/placement/spot_book.h"

namespace frugal::engine {

class SpotSolver {
 public:
  // Looks for queued tables every `interval`. A null book: Start does nothing.
  SpotSolver(std::shared_ptr<policy::SpotBook> book, std::chrono::milliseconds interval)
      : book_(std::move(book)), thread_(interval, [this] { Tick(); }) {}
  void Start() {
    if (book_) thread_.Start();
  }
  void Stop() { thread_.Stop(); }  // finishes the table in progress, then joins

 private:
  void Tick();
  std::shared_ptr<policy::SpotBook> book_;
  Periodic thread_;  // last: stopped (joined) before the members it uses go
};

}  // namespace frugal::engine
