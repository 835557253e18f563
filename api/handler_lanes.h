// Admission to request handlers by lane (decision 0018): user requests and the worker
// protocol each have a bounded number of handlers running at once, so a burst of user
// traffic cannot take every database connection and starve heartbeats (which would cost
// every worker its lease). /healthz takes no lane at all. Internal to api/.
//
// Threading: thread-safe; one Lane per kind, shared by all connection threads.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>

#include "common/status.h"

namespace frugal::api {

class Lane {
 public:
  Lane(std::string name, int slots) : name_(std::move(name)), slots_(slots) {}

  // Takes a slot, waiting at most `wait`; Unavailable (-> 503 + Retry-After) if none came
  // free. Every Ok must be paired with one Leave().
  Status Enter(std::chrono::milliseconds wait);
  void Leave();

  const std::string& name() const { return name_; }

 private:
  const std::string name_;
  const int slots_;
  std::mutex mu_;
  std::condition_variable free_;
  int busy_ = 0;  // guarded by mu_
};

// The lane the calling thread's handler holds. The router marks it (HoldLane) once the
// handler is admitted and leaves it (LeaveHeldLane) when the handler returns; a handler
// that is about to wait without a database connection may leave it earlier, so that
// another request can have the slot: a single submit that joins a group (decision 0047),
// whose group holds one connection for all its requests. Leaving twice is a no-op.
void HoldLane(Lane* lane);
void LeaveHeldLane();

struct HandlerLanes {
  // `user_slots` should stay below the database pool size, so that workers and the engine
  // always find a connection however busy users are.
  // `wait_slots` bounds the long-polls (POST /v1/workers/wait), which hold a connection
  // but no database connection while they wait, so they never take a worker slot.
  HandlerLanes(int user_slots, int worker_slots, int wait_slots = 512)
      : users("users", user_slots), workers("workers", worker_slots), waits("waits", wait_slots) {}

  // The lane for a route pattern: waits for /v1/workers/wait, workers for the rest of
  // /v1/workers/*, none (nullptr) for /healthz and /readyz, users for everything else.
  Lane* For(const std::string& pattern);

  Lane users;
  Lane workers;
  Lane waits;
};

}  // namespace frugal::api
