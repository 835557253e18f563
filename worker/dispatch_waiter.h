// Long-polls POST /v1/workers/wait on its own thread and connection (decision 0027), so
// the worker learns of new assignments and stop orders within milliseconds of the cycle
// that made them, instead of at its next heartbeat. A change calls `on_change` with the
// reply, which carries the orders themselves from a scheduler that reads them (decision
// 0038); the worker starts them, or heartbeats when the reply has none. The heartbeat
// still re-sends every order until it is acknowledged, so a lost or spurious wake-up
// costs at most one heartbeat interval or one extra heartbeat.
//
// Threading: every method is thread-safe; `on_change` runs on the waiter's thread.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "api/client.h"
#include "common/clock.h"
#include "worker/waker.h"

namespace frugal::worker {

// The worker's requests keep their connection when each starts within this of the previous
// one's end (api::ClientOptions::keep_alive_gap): a node finishing and starting jobs back
// to back reuses one, and its dispatch poll, renewed at once, keeps one; a node that only
// heartbeats (every 2 s by default; one set under 1 s keeps its connection too) holds none
// between them.
inline constexpr std::chrono::milliseconds kKeepAliveGap{1000};

class DispatchWaiter {
 public:
  DispatchWaiter(std::string base_url, std::string node,
                 std::function<void(const nlohmann::json& reply)> on_change);
  ~DispatchWaiter();  // Stop()s
  DispatchWaiter(const DispatchWaiter&) = delete;
  DispatchWaiter& operator=(const DispatchWaiter&) = delete;

  void Start();
  void Stop();  // ends a poll in flight and joins the thread
  // The node credential to poll with; empty pauses polling (not registered).
  void SetCredential(std::string credential);

 private:
  void Loop();
  void Pause(Millis d);

  const std::string base_url_;
  const std::string node_;
  const std::function<void(const nlohmann::json&)> on_change_;
  api::Client client_;  // its own connection: the agent's requests never queue behind a poll
  std::mutex mu_;
  std::condition_variable cv_;
  std::string credential_;   // guarded by mu_
  bool credential_changed_ = false;  // guarded by mu_
  bool stopping_ = false;    // guarded by mu_
  std::thread thread_;
};

}  // namespace frugal::worker
