// A thread that runs a task every `interval` until stopped: the scheduler's background
// loops (availability refits, planner statistics) that must never run in the cycle. The
// first run is at Start; a run that fails reports it itself (the task returns nothing).
//
// Threading: Start and Stop from one thread; the task runs on the Periodic's own thread,
// one run at a time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace frugal {

class Periodic {
 public:
  Periodic(std::chrono::milliseconds interval, std::function<void()> task)
      : interval_(interval), task_(std::move(task)) {}
  ~Periodic() { Stop(); }
  Periodic(const Periodic&) = delete;
  Periodic& operator=(const Periodic&) = delete;

  void Start();  // does nothing if already started; a stopped Periodic does not restart
  void Stop();   // lets the run in progress finish, then joins; safe to call twice

 private:
  void Loop();

  const std::chrono::milliseconds interval_;
  const std::function<void()> task_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace frugal
