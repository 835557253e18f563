#include "scheduler/engine/alert_dispatcher.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace frugal::engine {

void AlertDispatcher::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void AlertDispatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void AlertDispatcher::Wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_all();
}

StatusOr<int> AlertDispatcher::RunOnce() {
  ASSIGN_OR_RETURN(auto due, store_.ClaimAlertDeliveries(options_.batch));
  int delivered = 0;
  for (const auto& d : due) {
    Status sent = sender_.Post(d.url, d.payload);
    if (sent.ok()) {
      ++delivered;
      spdlog::info(R"("event":"budget_alert_delivered","alert_id":{},"attempt":{})", d.alert_id,
                   d.attempt);
    } else {
      const bool last = d.attempt >= options_.max_attempts;
      spdlog::warn(R"("event":"{}","alert_id":{},"attempt":{},"error":"{}")",
                   last ? "budget_alert_delivery_failed" : "budget_alert_delivery_retry",
                   d.alert_id, d.attempt, JsonEscape(sent.message()));
    }
    // If this write fails the claim lapses after a minute and the alert is sent again:
    // at least once, never lost.
    RETURN_IF_ERROR(store_.RecordAlertDelivery(d.alert_id, sent.ok(), sent.message(),
                                               options_.max_attempts, options_.backoff));
  }
  return delivered;
}

void AlertDispatcher::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    woken_ = false;
    lock.unlock();
    if (auto r = RunOnce(); !r.ok()) {
      spdlog::warn(R"("event":"budget_alert_dispatch_failed","error":"{}")",
                   JsonEscape(r.status().ToString()));
    }
    lock.lock();
    cv_.wait_for(lock, options_.poll, [this] { return stopping_ || woken_; });
  }
}

void AnnounceBudgetAlerts(const std::vector<store::BudgetAlert>& fired,
                          const std::function<void()>& wake) {
  for (const auto& a : fired) {
    spdlog::warn(R"("event":"budget_alert","team":"{}","threshold_pct":{},"used_micros":{},)"
                 R"("limit_micros":{},"webhook":"{}")",
                 JsonEscape(a.team), a.threshold_pct, a.used, a.limit, a.delivery_state);
  }
  if (!fired.empty() && wake) wake();
}

}  // namespace frugal::engine
