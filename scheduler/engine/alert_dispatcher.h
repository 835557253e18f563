// Budget alerts leave the scheduler here (decision 0010). The cycle records alerts in the
// database as it applies its plan (CycleStore::ApplyPlan: one row per team, period and
// threshold; AnnounceBudgetAlerts below logs them); an
// AlertDispatcher on its own thread POSTs the ones with a webhook, so a slow or dead
// webhook never holds up a scheduling cycle, and an alert whose POST fails stays pending
// and is retried with backoff until it is delivered or given up (and logged).
// The HTTP client is behind WebhookSender: the engine does not include httplib; the
// scheduler binary wires api::HttpWebhookSender in.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/status.h"
#include "scheduler/store/keeper_store.h"

namespace frugal::engine {

class WebhookSender {
 public:
  virtual ~WebhookSender() = default;
  // POSTs `json_body` to `url`; Ok only for a 2xx answer. Thread-compatible: one caller.
  virtual Status Post(const std::string& url, const std::string& json_body) = 0;
};

struct AlertDispatcherOptions {
  std::chrono::milliseconds poll{1000};  // how often due retries are looked for
  int max_attempts = 5;                  // then the alert is marked failed
  Seconds backoff{2};                    // before retry n: backoff x 2^(n-1)
  int batch = 16;                        // alerts claimed per pass
};

// Threading: Start/Stop/Wake from any thread; passes run on the dispatcher's own thread.
class AlertDispatcher {
 public:
  AlertDispatcher(store::KeeperStore& store, WebhookSender& sender,
                  AlertDispatcherOptions options = {})
      : store_(store), sender_(sender), options_(options) {}
  ~AlertDispatcher() { Stop(); }
  AlertDispatcher(const AlertDispatcher&) = delete;
  AlertDispatcher& operator=(const AlertDispatcher&) = delete;

  void Start();
  void Stop();  // finishes the POST in progress, then joins
  void Wake();  // new alerts: look now rather than at the next poll

  // One pass on the caller's thread: claims due alerts, POSTs each, records the outcome.
  // Returns how many were delivered. For tests and the thread's loop.
  StatusOr<int> RunOnce();

 private:
  void Loop();

  store::KeeperStore& store_;
  WebhookSender& sender_;
  const AlertDispatcherOptions options_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;     // guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  std::thread thread_;
};

// The cycle's part, after its plan committed with the alerts the teams' spending reached
// (CycleStore::ApplyPlan records them): logs each new one and calls `wake` if there are any,
// so the dispatcher delivers them now rather than at its next poll. Never HTTP.
void AnnounceBudgetAlerts(const std::vector<store::BudgetAlert>& fired,
                          const std::function<void()>& wake);

}  // namespace frugal::engine
