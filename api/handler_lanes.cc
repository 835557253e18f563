#include "api/handler_lanes.h"

namespace frugal::api {

Status Lane::Enter(std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!free_.wait_for(lock, wait, [&] { return busy_ < slots_; })) {
    return Unavailable("server busy: no free " + name_ + " handler within " +
                       std::to_string(wait.count()) + " ms; retry shortly");
  }
  ++busy_;
  return Status::Ok();
}

void Lane::Leave() {
  std::lock_guard<std::mutex> lock(mu_);
  --busy_;
  free_.notify_one();
}

namespace {
thread_local Lane* held_lane = nullptr;
}  // namespace

void HoldLane(Lane* lane) { held_lane = lane; }

void LeaveHeldLane() {
  if (held_lane == nullptr) return;
  held_lane->Leave();
  held_lane = nullptr;
}

Lane* HandlerLanes::For(const std::string& pattern) {
  // Liveness must answer even when every handler is busy: it touches nothing shared.
  // Readiness bounds its own wait (ReadyCheck), so it needs no lane either.
  if (pattern == "/healthz" || pattern == "/readyz") return nullptr;
  if (pattern == "/v1/workers/wait") return &waits;
  if (pattern.rfind("/v1/workers/", 0) == 0) return &workers;
  return &users;
}

}  // namespace frugal::api
