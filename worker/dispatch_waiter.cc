#include "worker/dispatch_waiter.h"

#include <spdlog/spdlog.h>

#include "common/log.h"

namespace frugal::worker {

namespace {

// Shorter than the server's 25 s cap and the client's 30 s timeout.
constexpr std::int64_t kWaitMs = 20000;

}  // namespace

DispatchWaiter::DispatchWaiter(std::string base_url, std::string node,
                               std::function<void(const nlohmann::json&)> on_change)
    : base_url_(std::move(base_url)),
      node_(std::move(node)),
      on_change_(std::move(on_change)),
      client_(base_url_, "", {std::chrono::seconds(30), kKeepAliveGap}) {}

DispatchWaiter::~DispatchWaiter() { Stop(); }

void DispatchWaiter::Start() { thread_ = std::thread([this] { Loop(); }); }

void DispatchWaiter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  client_.Abort();
  if (thread_.joinable()) thread_.join();
}

void DispatchWaiter::SetCredential(std::string credential) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    credential_ = std::move(credential);
    credential_changed_ = true;
  }
  cv_.notify_all();
  client_.Abort();  // a poll under the old credential would only be refused
}

void DispatchWaiter::Pause(Millis d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [&] { return stopping_ || credential_changed_; });
}

void DispatchWaiter::Loop() {
  std::int64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !credential_.empty(); });
      if (stopping_) return;
      if (credential_changed_) {
        client_.set_token(credential_);  // no request is in flight on this thread now
        credential_changed_ = false;
      }
    }
    auto r = client_.Post("/v1/workers/wait",
                          {{"node", node_}, {"seen", seen}, {"wait_ms", kWaitMs}});
    if (r.ok() && r->status == 200 && r->body.is_object() &&
        r->body.value("generation", nlohmann::json()).is_number_integer()) {
      const auto generation = r->body["generation"].get<std::int64_t>();
      if (generation != seen) {
        seen = generation;
        on_change_(r->body);
      }
      continue;
    }
    if (r.ok() && r->status == 404) {
      // A scheduler older than this worker: heartbeats alone bring the orders.
      spdlog::warn(R"("event":"dispatch_wait_unsupported","url":"{}")", JsonEscape(base_url_));
      return;
    }
    if (r.ok() && r->status != 401) {
      spdlog::debug(R"("event":"dispatch_wait_failed","status":{})", r->status);
    }
    // Unreachable, refused or aborted: the heartbeat loop handles the lease; try again soon.
    Pause(Millis(1000));
  }
}

}  // namespace frugal::worker
