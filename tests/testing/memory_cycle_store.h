// An in-memory CycleStore (scheduler/store/cycle_store.h): the engine's port without
// PostgreSQL, for engine tests and the port's contract suite
// (tests/scheduler/store/cycle_store_contract_test.cc runs the same cases on PgStore).
//
// A MemoryCluster is the "database": pools, nodes, jobs, attempts and the leader lease, on
// a FakeClock. Several MemoryCycleStores on one cluster are several schedulers sharing it,
// each with its own term. Thread-safe: every call locks the cluster's one mutex.
//
// It keeps the port's contract, not PostgreSQL's whole schema: jobs are PendingJob rows
// with a state and a reason, attempts are RunningAttempt rows with an end, and there are no
// budgets (so ApplyPlan records no alerts) and no dependencies beyond `waiting_for`.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/clock.h"
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

  struct Job {
    model::PendingJob row;
    model::JobState state = model::JobState::kPending;
    int max_attempts = 3;
    int failures = 0;
  };
  struct Attempt {
    model::RunningAttempt row;
    bool ended = false;
    bool stop_ordered = false;
  };
  struct NodeRow {
    model::Node node;
    bool lost = false;
  };

  bool LiveLocked(const NodeRow& n) const {
    return !n.lost && n.node.lease_expires_at > clock_.Now();
  }

  mutable std::mutex mu_;
  FakeClock clock_;
  std::int64_t next_id_ = 1;                      // guarded by mu_
  std::map<model::PoolId, model::Pool> pools_;    // guarded by mu_
  std::map<model::NodeId, NodeRow> nodes_;        // guarded by mu_
  std::map<model::JobId, Job> jobs_;              // guarded by mu_
  std::map<model::AttemptId, Attempt> attempts_;  // guarded by mu_
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
