// An in-memory QueueStore (scheduler/store/queue_store.h) on a MemoryCluster
// (memory_cycle_store.h): the job queue without PostgreSQL, held to PgStore's contract by
// tests/scheduler/store/queue_store_contract_test.cc. A job it stores is a job of the
// cluster, so a MemoryCycleStore on the same cluster sees it in its snapshot.
//
// Shares ownership of the cluster. Thread-safe: every call locks the cluster's one mutex and
// so happens whole or not at all (a request is checked in full before anything is written).
// Errors as the port says.
//
// Principals are taken as given (there are no tokens here): a caller's team is its team_id,
// and an admin may depend on any team's jobs, as in PostgreSQL. It keeps the port's
// contract, not PostgreSQL's whole schema. Left out: the cost ledger (ArraySummary.cost and
// .lost are 0), checkpoints (JobDetail.latest_checkpoint is never set), and the events the
// worker's reports and stop orders write (a job's events are submit, cancel and the cycle's
// state changes). Job and array ids come from one counter, not two sequences.
#pragma once

#include <memory>
#include <utility>

#include "scheduler/store/queue_store.h"
#include "tests/testing/memory_cycle_store.h"

namespace frugal::testing {

class MemoryQueueStore final : public store::QueueStore {
 public:
  explicit MemoryQueueStore(std::shared_ptr<MemoryCluster> cluster)
      : cluster_(std::move(cluster)) {}

  StatusOr<store::SubmitResult> Submit(const store::Principal& who,
                                       const store::SubmitRequest& req) override;
  StatusOr<std::vector<store::SubmitResult>> SubmitMany(
      const store::Principal& who, const std::vector<store::SubmitRequest>& reqs) override;
  StatusOr<std::vector<store::BatchItem>> SubmitBatch(
      const store::Principal& who, const std::vector<store::SubmitRequest>& reqs) override;
  StatusOr<store::ArrayResult> SubmitArray(const store::Principal& who,
                                           const store::ArrayRequest& req) override;
  StatusOr<store::ArraySummary> GetArray(std::int64_t id,
                                         std::optional<model::TeamId> visible_team) override;
  StatusOr<int> CancelArray(std::int64_t id, std::optional<model::TeamId> visible_team,
                            const std::string& actor) override;
  StatusOr<std::vector<model::JobId>> ArrayTasks(
      const std::vector<std::int64_t>& arrays, std::optional<model::TeamId> visible_team) override;
  StatusOr<store::JobPage> ListJobs(const store::JobFilter& filter) override;
  StatusOr<store::JobDetail> GetJob(model::JobId id,
                                    std::optional<model::TeamId> visible_team) override;
  StatusOr<store::QueuePosition> PendingAhead(model::JobId id) override;
  StatusOr<model::Job> CancelJob(model::JobId id, std::optional<model::TeamId> visible_team,
                                 const std::string& actor) override;

 private:
  using Row = MemoryCluster::Job;

  // FailedPrecondition naming the dependencies of `reqs` that do not exist or that `who`
  // cannot see (an admin sees every team's).
  Status CheckDependenciesLocked(const store::Principal& who,
                                 const std::vector<const model::JobSpec*>& specs) const;
  // Conflict if the team's key names a job stored for another request; else that job's id
  // (0: the key is unused or unset). `item` prefixes a batch's message.
  StatusOr<model::JobId> ReplayLocked(const store::Principal& who, const store::SubmitRequest& req,
                                      const std::string& item) const;
  // Stores one job of `who`, checked already; returns its id.
  model::JobId InsertLocked(const store::Principal& who, const store::SubmitRequest& req,
                            int priority_rank, std::optional<std::int64_t> array_id,
                            std::optional<int> array_index);
  // NotFound unless the row exists and `visible_team` (when set) owns it.
  StatusOr<Row*> VisibleJobLocked(model::JobId id, std::optional<model::TeamId> visible_team);
  StatusOr<const MemoryCluster::Array*> VisibleArrayLocked(
      std::int64_t id, std::optional<model::TeamId> visible_team) const;
  // Cancels one job as model::OnCancel says; a job already asked to stop is left as it is.
  Status CancelLocked(Row& row, const std::string& actor);
  model::Job ViewLocked(const Row& row) const;
  store::ArraySummary SummaryLocked(std::int64_t id) const;

  std::shared_ptr<MemoryCluster> cluster_;
};

}  // namespace frugal::testing
