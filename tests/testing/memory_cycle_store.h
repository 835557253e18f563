// An in-memory CycleStore (scheduler/store/cycle_store.h): the engine's port without
// PostgreSQL, for engine tests and the port's contract suite
// (tests/scheduler/store/cycle_store_contract_test.cc runs the same cases on PgStore).
//
// A MemoryCluster is the "database": pools, nodes, jobs, job arrays, attempts and the leader
// lease, on a FakeClock. Several MemoryCycleStores on one cluster are several schedulers
// sharing it, each with its own term; a MemoryQueueStore (memory_queue_store.h) on it is the
// API submitting to it. Thread-safe: every call locks the cluster's one mutex.
//
// It keeps the port's contract, not PostgreSQL's whole schema: jobs are PendingJob rows
// with a state and a reason (and, when the queue port stored them, their spec), attempts are
// RunningAttempt rows with an end, and there are no budgets (so ApplyPlan records no
// alerts), no retry backoff and no checkpoints. The snapshot's waiting_for is what AddJob
// gave plus the job's dependencies still open, as the SQL computes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/model/lifecycle.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/store/cycle_store.h"

namespace frugal::testing {

class MemoryCluster {
 public:
  explicit MemoryCluster(Timestamp start) : clock_(start) {}

  // The cluster's time: leases and the snapshot's now read it; tests move it.
  FakeClock& clock() { return clock_; }

  // Adds rows; an id of 0 gets the next free one. Returns the id.
  model::PoolId AddPool(model::Pool pool);
  // A live node whose lease runs `lease` from now.
  model::NodeId AddNode(model::Node node, Seconds lease = Seconds(60));
  // A pending job (`reason` as stored; `max_attempts` failures end it).
  model::JobId AddJob(model::PendingJob job, int max_attempts = 3);

  // The node's lease lapses now (its worker went silent); a sweep once the clock has moved
  // on declares it lost (a lease is lost after its expiry, not at it, as in PostgreSQL).
  void ExpireNode(model::NodeId id);
  // The leader lease lapses now, whoever holds it.
  void ExpireLeaderLease();

  // A job's state and reason, for assertions (kFailed and "" for an unknown id).
  model::JobState StateOf(model::JobId id) const;
  std::string ReasonOf(model::JobId id) const;

 private:
  friend class MemoryCycleStore;
  friend class MemoryQueueStore;

  struct Job {
    model::PendingJob row;  // what the snapshot shows; row.reason is the job's reason
    model::JobState state = model::JobState::kPending;
    int max_attempts = 3;
    int failures = 0;
    // The rest of the job as the queue port stores and shows it (AddJob leaves it empty).
    model::JobSpec spec;
    std::string team;
    model::UserId user_id = 0;
    std::string user;
    std::string request_sha256;  // of the submit that stored it under an idempotency key
    bool cancel_requested = false;
    int attempts = 0;
    Timestamp updated_at{};
    std::optional<Timestamp> started_at;
    std::optional<Timestamp> finished_at;
    std::optional<std::int64_t> array_id;
    std::optional<int> array_index;
    std::vector<model::JobEvent> events;  // oldest first
  };
  struct Attempt {
    model::RunningAttempt row;
    int number = 0;  // the job's n-th start; a gang's parts share it
    int rank = 0;    // the part of a gang
    bool ended = false;
    bool stop_ordered = false;
    std::optional<Timestamp> ended_at;
    std::string end_reason;  // model::ToString(AttemptEnd), once ended
  };
  // A job array (decision 0026); its tasks are the jobs with its id as array_id.
  struct Array {
    model::TeamId team_id = 0;
    std::string team;
    std::string user;
    std::string name;
    int first = 0;
    int last = 0;
    int step = 1;
    int task_count = 0;
    std::optional<int> max_running;
    Timestamp created_at{};
    std::string request_sha256;
  };
  using Key = std::pair<model::TeamId, std::string>;  // idempotency keys are per team
  struct NodeRow {
    model::Node node;
    bool lost = false;
  };

  bool LiveLocked(const NodeRow& n) const {
    return !n.lost && n.node.lease_expires_at > clock_.Now();
  }
  // Appends an event to the job's history and marks the job updated now.
  void EventLocked(Job& job, const std::string& kind, model::JobState from, model::JobState to,
                   const std::string& message);
  // Every pending job the cycle may consider, in claim order, with its open and failed
  // dependencies filled in, less a throttled array's tasks beyond its room (max_running
  // less those running), as PgStore::LoadSnapshot selects them; `also` is kept even then
  // (a snapshot's focus job).
  std::vector<model::PendingJob> PendingLocked(std::optional<model::JobId> also = {}) const;

  mutable std::mutex mu_;
  FakeClock clock_;
  std::int64_t next_id_ = 1;                      // guarded by mu_
  std::map<model::PoolId, model::Pool> pools_;    // guarded by mu_
  std::map<model::NodeId, NodeRow> nodes_;        // guarded by mu_
  std::map<model::JobId, Job> jobs_;              // guarded by mu_
  std::map<model::AttemptId, Attempt> attempts_;  // guarded by mu_
  std::map<std::int64_t, Array> arrays_;          // guarded by mu_
  std::map<Key, model::JobId> job_keys_;          // guarded by mu_
  std::map<Key, std::int64_t> array_keys_;        // guarded by mu_
  std::int64_t next_event_id_ = 1;                // guarded by mu_
  std::int64_t term_ = 0;                         // guarded by mu_; 0: never taken
  std::string holder_;                            // guarded by mu_
  Timestamp lease_expires_{};                     // guarded by mu_
};

class MemoryCycleStore final : public store::CycleStore {
 public:
  // `holder`: this scheduler's name in the lease; distinct per store on one cluster.
  MemoryCycleStore(std::shared_ptr<MemoryCluster> cluster, std::string holder)
      : cluster_(std::move(cluster)), holder_(std::move(holder)) {}

  StatusOr<std::vector<store::LostNode>> SweepLostNodes() override;
  StatusOr<store::LeaderStatus> TryLeadership(std::chrono::milliseconds ttl) override;
  Status ReleaseLeadership() override;
  StatusOr<model::Snapshot> LoadSnapshot(const store::PendingWindow& window) override;
  StatusOr<store::AppliedPlan> ApplyPlan(const model::Plan& plan) override;

 private:
  Status FenceLocked() const;  // NotLeader unless this store holds an unexpired term
  // Ends the attempt and, once its job has no live part left, moves the job as
  // model::AfterAttempt says.
  void EndAttemptLocked(MemoryCluster::Attempt& a, model::AttemptEnd end, const std::string& node);

  std::shared_ptr<MemoryCluster> cluster_;
  const std::string holder_;
  std::int64_t term_ = 0;  // guarded by cluster_->mu_: the term this store holds, 0: none
};

}  // namespace frugal::testing
