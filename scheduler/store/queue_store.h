// The QueueStore port: the job queue as researchers use it (submit, arrays, list, get,
// cancel). The API's job routes call it; JobStore (job_store.h) includes it.
//
// Threading: implementations are thread-safe. Every method is one transaction: a call
// either happens whole or not at all. Errors: InvalidArgument / FailedPrecondition for a
// request that cannot be stored (the field named), NotFound for what the caller cannot
// see, Conflict for a state that forbids it, Unavailable when the database is out of reach.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/money.h"
#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/store/principal.h"

namespace frugal::store {

// One job to store, as admission left it (service/submit_service.h has applied the
// guardrails: a default max_runtime, an approval hold).
struct SubmitRequest {
  model::JobSpec spec;
  std::optional<std::string> idempotency_key;
  std::string request_sha256;  // of the canonical body, to tell a retry from a reuse
  // Set: the job starts held, awaiting an admin's approval, with this reason (guardrails).
  std::optional<std::string> approval_reason;
};

// The job as stored (or as an earlier submit with the same key stored it).
struct SubmitResult {
  model::Job job;
  bool created = false;  // false: an earlier submit with the same key
};

// One job of a batch submit (SubmitBatch), in request order.
struct BatchItem {
  model::JobId id = 0;
  bool created = false;  // false: an earlier batch with the same key stored it
  model::JobState state = model::JobState::kPending;
};

constexpr int kMaxArrayTasks = 10000;

// A job array (decision 0026): one spec, run once per index of first..last by step. Each
// task is a job whose env adds FRUGAL_ARRAY_ID and FRUGAL_ARRAY_INDEX.
struct ArrayRequest {
  SubmitRequest task;  // the spec every task shares; its key and hash are the array's
  int first = 0;
  int last = 0;
  int step = 1;
  std::optional<int> max_running;  // at most this many tasks running at once
  // Task i also waits for the task with index i of this array, where it has one.
  std::optional<std::int64_t> after_array_index;
};

// An array as `frugal status --array` shows it: its tasks counted by state, and what the
// sweep has cost so far.
struct ArraySummary {
  std::int64_t id = 0;
  std::string team;
  std::string user;
  std::string name;
  int first = 0;
  int last = 0;
  int step = 1;
  int task_count = 0;
  std::optional<int> max_running;
  Timestamp created_at{};
  std::map<std::string, int> states;  // job state -> tasks in it
  model::JobId first_job = 0;
  model::JobId last_job = 0;
  Micros cost = 0;
  Micros lost = 0;  // of `cost`, the work lost to interruptions
};

// The array as stored (or as an earlier submit with the same key stored it).
struct ArrayResult {
  ArraySummary array;
  bool created = false;  // false: an earlier submit with the same key
};

// Which jobs ListJobs returns, newest first; every field narrows (unset: any).
struct JobFilter {
  std::optional<model::JobState> state;
  std::optional<model::TeamId> visible_team;  // researchers see their own team only
  std::optional<std::string> team;
  std::optional<std::string> user;
  std::optional<std::pair<std::string, std::string>> label;
  std::optional<model::JobId> before;  // cursor: ids below this one
  std::optional<std::int64_t> array;   // the tasks of this job array only
  int limit = 50;
};

// One page of ListJobs; `next_cursor` is the `before` of the next page (unset: last page).
struct JobPage {
  std::vector<model::Job> jobs;  // newest first
  std::optional<model::JobId> next_cursor;
};

// A job with its attempts (oldest first), its latest committed checkpoint and its events
// (oldest first), as GetJob returns it.
struct JobDetail {
  model::Job job;
  std::vector<model::Attempt> attempts;
  std::optional<model::Checkpoint> latest_checkpoint;
  std::vector<model::JobEvent> events;
};

// Where a pending job stands in the queue (QueueStore::PendingAhead): the pending jobs of
// higher priority classes, which go first, and the other pending jobs of its own class,
// which the cycle orders by score. Counted over the whole queue, not a cycle's window:
// every pending job, those waiting on a dependency, a retry's backoff or a throttled
// array's room included (they are ahead in claim order, if not yet eligible).
struct QueuePosition {
  int higher_pending = 0;
  int same_class_pending = 0;
};

class QueueStore {
 public:
  virtual ~QueueStore() = default;

  // Inserts the job (state pending) and its `submitted` event. With an idempotency key
  // seen before in the team: the earlier job if the request hash matches, else Conflict.
  // Dependencies must name existing jobs the caller can see (FailedPrecondition).
  virtual StatusOr<SubmitResult> Submit(const Principal& who, const SubmitRequest& req) = 0;
  // Stores every job of `reqs` in one transaction, or none (decision 0024). Items with an
  // idempotency key that an earlier submit of the same team stored with the same request
  // come back with created=false; with another request, Conflict naming the item.
  virtual StatusOr<std::vector<BatchItem>> SubmitBatch(const Principal& who,
                                                       const std::vector<SubmitRequest>& reqs) = 0;
  // Stores independent single submits, each as Submit would store it, in one transaction
  // and one INSERT, or none (decision 0047): what SubmitService does with single submits
  // that arrive together. Every request must have no idempotency key and no dependencies
  // (InvalidArgument otherwise: those keep Submit's own path). Results in request order.
  virtual StatusOr<std::vector<SubmitResult>> SubmitMany(
      const Principal& who, const std::vector<SubmitRequest>& reqs) = 0;
  // Stores the array and all its tasks in one transaction (decision 0026). A repeated key
  // with the same request returns the earlier array (created=false); with another, Conflict.
  virtual StatusOr<ArrayResult> SubmitArray(const Principal& who, const ArrayRequest& req) = 0;
  // NotFound unless the array exists and `visible_team` (when set) owns it.
  virtual StatusOr<ArraySummary> GetArray(std::int64_t id,
                                          std::optional<model::TeamId> visible_team) = 0;
  // Cancels every task that has not ended, as CancelJob does one; returns how many.
  virtual StatusOr<int> CancelArray(std::int64_t id, std::optional<model::TeamId> visible_team,
                                    const std::string& actor) = 0;
  // Every task of `arrays`, for a dependency on whole arrays (`after_arrays`). NotFound
  // naming an array that does not exist or that `visible_team` cannot see.
  virtual StatusOr<std::vector<model::JobId>> ArrayTasks(
      const std::vector<std::int64_t>& arrays, std::optional<model::TeamId> visible_team) = 0;

  // The jobs `filter` selects, newest first, at most `filter.limit` (the API allows 1 to
  // 500).
  virtual StatusOr<JobPage> ListJobs(const JobFilter& filter) = 0;

  // NotFound if the job does not exist or is not in `visible_team` (when set).
  virtual StatusOr<JobDetail> GetJob(model::JobId id,
                                     std::optional<model::TeamId> visible_team) = 0;

  // NotFound unless `id` is a pending job.
  virtual StatusOr<QueuePosition> PendingAhead(model::JobId id) = 0;

  // Pending/held jobs end `cancelled` at once; running ones get cancel_requested (the
  // worker stops them). Conflict if the job has already ended.
  virtual StatusOr<model::Job> CancelJob(model::JobId id,
                                         std::optional<model::TeamId> visible_team,
                                         const std::string& actor) = 0;
};

}  // namespace frugal::store
