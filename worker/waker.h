// What the worker's main loop sleeps on between ticks: a pipe that a job's exit (SIGCHLD),
// a dispatch from the scheduler or a no-op "job" can write to, so the loop wakes at once
// instead of at the next tick (decision 0027).
//
// Threading: Notify() is thread-safe and async-signal-safe; Wait() is for one thread.
#pragma once

#include <chrono>

namespace frugal::worker {

using Millis = std::chrono::milliseconds;

class Waker {
 public:
  Waker();
  ~Waker();
  Waker(const Waker&) = delete;
  Waker& operator=(const Waker&) = delete;

  // Returns after `timeout`, or earlier if Notify() was called since the last Wait()
  // returned (notifications before the wait count: none is lost).
  void Wait(Millis timeout);
  void Notify();

  // Makes SIGCHLD Notify() this waker (one per process; the last call wins).
  void NotifyOnChildExit();

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
};

}  // namespace frugal::worker
