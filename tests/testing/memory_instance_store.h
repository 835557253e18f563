// An in-memory InstanceStore for unit tests of the exec provider: the same compare-and-set
// rules as the PostgreSQL one (pg_store_instances.cc), a clock the test sets, no audit log
// and no cost (cost_micros stays 0). Thread-safe, as the provider's command threads need.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "scheduler/store/instance_store.h"

namespace frugal::testing {

class MemoryInstanceStore final : public store::InstanceStore {
 public:
  explicit MemoryInstanceStore(std::set<std::string> pools) : pools_(std::move(pools)) {}

  void SetNow(Timestamp now) {
    std::lock_guard<std::mutex> lock(mu_);
    now_ = now;
  }

  StatusOr<std::vector<store::Instance>> ListInstances(
      std::optional<Timestamp> ended_since) override {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<store::Instance> out;
    for (const auto& x : rows_)
      if (x.state != store::InstanceState::kGone || (ended_since && *x.ended_at >= *ended_since))
        out.push_back(x);
    return out;
  }

  StatusOr<store::Instance> AddInstance(const std::string& pool, const std::string& node,
                                        int gpus, const std::string& instance_id,
                                        const std::string& join_token_sha256) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (!pools_.count(pool)) return NotFound("pool '" + pool + "' not found");
    for (const auto& x : rows_)
      if (x.node == node && x.state != store::InstanceState::kGone)
        return Conflict("an instance for node '" + node + "' already exists");
    store::Instance x;
    x.id = static_cast<std::int64_t>(rows_.size()) + 1;
    x.pool = pool;
    x.node = node;
    x.gpus = gpus;
    x.requested_at = now_;
    x.instance_id = instance_id;
    if (!instance_id.empty()) {
      x.state = store::InstanceState::kDestroying;
      x.leaked = true;
      x.created_at = now_;
      x.reason = "leak";
    }
    rows_.push_back(x);
    join_tokens_.push_back(join_token_sha256);
    return x;
  }

  StatusOr<store::Instance> ChangeInstance(std::int64_t id,
                                           const std::vector<store::InstanceState>& from,
                                           const store::InstanceChange& change) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (id < 1 || id > static_cast<std::int64_t>(rows_.size())) return NotFound("no instance");
    store::Instance& x = rows_[id - 1];
    bool allowed = false;
    for (auto s : from) allowed = allowed || x.state == s;
    if (!allowed) return FailedPrecondition("instance " + x.node + " is " + ToString(x.state));
    x.state = change.to;
    if (!change.instance_id.empty()) x.instance_id = change.instance_id;
    if (change.to == store::InstanceState::kBooting) x.created_at = now_;
    if (change.to == store::InstanceState::kRunning) x.registered_at = now_;
    if (change.to == store::InstanceState::kGone) x.ended_at = now_;
    if (!change.reason.empty()) x.reason = change.reason;
    if (!change.detail.empty()) x.detail = change.detail;
    return x;
  }

  // The join token hash each row was added with, by row (empty: none).
  std::vector<std::string> JoinTokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return join_tokens_;
  }

  std::vector<store::Instance> All() {
    std::lock_guard<std::mutex> lock(mu_);
    return rows_;
  }

 private:
  std::mutex mu_;
  std::set<std::string> pools_;
  Timestamp now_{};
  std::vector<store::Instance> rows_;
  std::vector<std::string> join_tokens_;
};

}  // namespace frugal::testing
