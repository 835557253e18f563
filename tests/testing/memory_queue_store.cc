#include "tests/testing/memory_queue_store.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "scheduler/model/lifecycle.h"

namespace frugal::testing {

using model::JobId;
using model::JobState;
using store::Principal;
using store::SubmitRequest;

namespace {

// The array's indices, first..last by step, as PgStore checks them.
StatusOr<std::vector<int>> Indices(const store::ArrayRequest& req) {
  if (req.first < 0 || req.last < req.first || req.step < 1) {
    return InvalidArgument(
        "array indices must be FIRST-LAST[:STEP] with 0 <= FIRST <= LAST and STEP >= 1", "array");
  }
  const std::int64_t count = (static_cast<std::int64_t>(req.last) - req.first) / req.step + 1;
  if (count > store::kMaxArrayTasks) {
    return InvalidArgument("an array has at most " + std::to_string(store::kMaxArrayTasks) +
                               " tasks; " + std::to_string(count) + " asked",
                           "array");
  }
  std::vector<int> out;
  for (std::int64_t i = req.first; i <= req.last; i += req.step) out.push_back(static_cast<int>(i));
  return out;
}

}  // namespace

Status MemoryQueueStore::CheckDependenciesLocked(
    const Principal& who, const std::vector<const model::JobSpec*>& specs) const {
  const MemoryCluster& c = *cluster_;
  std::set<JobId> missing;
  for (const model::JobSpec* s : specs) {
    for (const auto* deps : {&s->after, &s->after_any}) {
      for (JobId d : *deps) {
        const auto it = c.jobs_.find(d);
        const bool visible = it != c.jobs_.end() && (who.role == store::Role::kAdmin ||
                                                     it->second.row.team_id == who.team_id);
        if (!visible) missing.insert(d);
      }
    }
  }
  if (missing.empty()) return Status::Ok();
  std::string ids;
  for (JobId id : missing) ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return FailedPrecondition("dependency job(s) [" + ids + "] do not exist", "after");
}

StatusOr<JobId> MemoryQueueStore::ReplayLocked(const Principal& who, const SubmitRequest& req,
                                               const std::string& item) const {
  if (!req.idempotency_key) return JobId{0};
  const MemoryCluster& c = *cluster_;
  const auto it = c.job_keys_.find({who.team_id, *req.idempotency_key});
  if (it == c.job_keys_.end()) return JobId{0};
  if (c.jobs_.at(it->second).request_sha256 != req.request_sha256) {
    return Conflict(item + "idempotency key '" + *req.idempotency_key +
                    "' was already used by job " + std::to_string(it->second) +
                    " with a different request; use a new key");
  }
  return it->second;
}

JobId MemoryQueueStore::InsertLocked(const Principal& who, const SubmitRequest& req,
                                     int priority_rank, std::optional<std::int64_t> array_id,
                                     std::optional<int> array_index) {
  MemoryCluster& c = *cluster_;
  const model::JobSpec& s = req.spec;
  Row job;
  job.row.id = c.next_id_++;
  job.row.team_id = who.team_id;
  job.row.gpus = s.gpus;
  job.row.nodes = s.nodes;
  job.row.gpu_types = s.gpu_types;
  job.row.min_gpu_mem_gb = s.min_gpu_mem_gb;
  job.row.priority_rank = priority_rank;
  job.row.tolerance = s.tolerance;
  job.row.deadline = s.deadline;
  job.row.created_at = c.clock_.Now();
  job.row.reason = req.approval_reason.value_or("");
  job.row.estimate = s.estimate;
  job.row.checkpoint_interval = s.checkpoint_interval;
  job.state = req.approval_reason ? JobState::kHeld : JobState::kPending;
  job.max_attempts = s.max_attempts;
  job.spec = s;
  // As stored: `after` is the must-succeed dependencies only.
  std::erase_if(job.spec.after, [&](JobId d) {
    return std::find(s.after_any.begin(), s.after_any.end(), d) != s.after_any.end();
  });
  job.team = who.team;
  job.user_id = who.user_id;
  job.user = who.user;
  job.array_id = array_id;
  job.array_index = array_index;
  if (req.idempotency_key) {
    job.request_sha256 = req.request_sha256;
    c.job_keys_[{who.team_id, *req.idempotency_key}] = job.row.id;
  }
  c.EventLocked(
      job, "submitted", job.state, job.state,
      "submitted by " + who.user + (req.approval_reason ? "; " + *req.approval_reason : ""));
  const JobId id = job.row.id;
  c.jobs_[id] = std::move(job);
  return id;
}

StatusOr<MemoryQueueStore::Row*> MemoryQueueStore::VisibleJobLocked(
    JobId id, std::optional<model::TeamId> visible_team) {
  const auto it = cluster_->jobs_.find(id);
  if (it == cluster_->jobs_.end() || (visible_team && it->second.row.team_id != *visible_team)) {
    return NotFound("job " + std::to_string(id) + " not found");
  }
  return &it->second;
}

StatusOr<const MemoryCluster::Array*> MemoryQueueStore::VisibleArrayLocked(
    std::int64_t id, std::optional<model::TeamId> visible_team) const {
  const auto it = cluster_->arrays_.find(id);
  if (it == cluster_->arrays_.end() || (visible_team && it->second.team_id != *visible_team)) {
    return NotFound("array " + std::to_string(id) + " not found");
  }
  return &it->second;
}

Status MemoryQueueStore::CancelLocked(Row& job, const std::string& actor) {
  ASSIGN_OR_RETURN(const model::CancelStep step, model::OnCancel(job.row.id, job.state, actor));
  if (job.cancel_requested) return Status::Ok();  // cancelling twice is not an error
  cluster_->EventLocked(job, step.ends_now ? "state_changed" : "cancel_requested", job.state,
                        step.to, "cancelled by " + actor);
  job.cancel_requested = true;
  job.state = step.to;
  job.row.reason = step.reason;
  if (step.ends_now) job.finished_at = cluster_->clock_.Now();
  return Status::Ok();
}

model::Job MemoryQueueStore::ViewLocked(const Row& row) const {
  model::Job j;
  j.id = row.row.id;
  j.spec = row.spec;
  j.team_id = row.row.team_id;
  j.team = row.team;
  j.user_id = row.user_id;
  j.user = row.user;
  j.state = row.state;
  j.reason = row.row.reason;
  j.cancel_requested = row.cancel_requested;
  j.attempts = row.attempts;
  j.created_at = row.row.created_at;
  j.updated_at = row.updated_at;
  j.started_at = row.started_at;
  j.finished_at = row.finished_at;
  j.array_id = row.array_id;
  j.array_index = row.array_index;
  return j;
}

store::ArraySummary MemoryQueueStore::SummaryLocked(std::int64_t id) const {
  const MemoryCluster::Array& a = cluster_->arrays_.at(id);
  store::ArraySummary s;
  s.id = id;
  s.team = a.team;
  s.user = a.user;
  s.name = a.name;
  s.first = a.first;
  s.last = a.last;
  s.step = a.step;
  s.task_count = a.task_count;
  s.max_running = a.max_running;
  s.created_at = a.created_at;
  for (const auto& [job_id, job] : cluster_->jobs_) {  // in id order: the first is the lowest
    if (job.array_id != id) continue;
    ++s.states[model::ToString(job.state)];
    if (s.first_job == 0) s.first_job = job_id;
    s.last_job = job_id;
  }
  return s;  // no cost ledger: cost and lost stay 0
}

StatusOr<store::SubmitResult> MemoryQueueStore::Submit(const Principal& who,
                                                       const SubmitRequest& req) {
  ASSIGN_OR_RETURN(const int rank, model::PriorityRank(req.spec.priority));
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  RETURN_IF_ERROR(CheckDependenciesLocked(who, {&req.spec}));
  ASSIGN_OR_RETURN(const JobId earlier, ReplayLocked(who, req, ""));
  if (earlier != 0) return store::SubmitResult{ViewLocked(cluster_->jobs_.at(earlier)), false};
  const JobId id = InsertLocked(who, req, rank, std::nullopt, std::nullopt);
  return store::SubmitResult{ViewLocked(cluster_->jobs_.at(id)), true};
}

StatusOr<std::vector<store::SubmitResult>> MemoryQueueStore::SubmitMany(
    const Principal& who, const std::vector<SubmitRequest>& reqs) {
  std::vector<int> ranks;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto& s = reqs[i].spec;
    if (reqs[i].idempotency_key || !s.after.empty() || !s.after_any.empty())
      return InvalidArgument("SubmitMany takes requests without keys or dependencies");
    ASSIGN_OR_RETURN(const int rank, model::PriorityRank(s.priority));
    ranks.push_back(rank);
  }
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  std::vector<store::SubmitResult> out;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const JobId id = InsertLocked(who, reqs[i], ranks[i], std::nullopt, std::nullopt);
    out.push_back(store::SubmitResult{ViewLocked(cluster_->jobs_.at(id)), true});
  }
  return out;
}

StatusOr<std::vector<store::BatchItem>> MemoryQueueStore::SubmitBatch(
    const Principal& who, const std::vector<SubmitRequest>& reqs) {
  std::set<std::string> keys;
  std::vector<const model::JobSpec*> specs;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const auto& key = reqs[i].idempotency_key;
    if (key && !keys.insert(*key).second) {
      return InvalidArgument("jobs[" + std::to_string(i) + "]: idempotency key '" + *key +
                                 "' appears twice in the batch",
                             "idempotency_key");
    }
    specs.push_back(&reqs[i].spec);
  }
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  RETURN_IF_ERROR(CheckDependenciesLocked(who, specs));
  // Every item checked before any is stored: the batch is stored whole or not at all.
  std::vector<int> ranks;
  std::vector<JobId> earlier;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    ASSIGN_OR_RETURN(const int rank, model::PriorityRank(reqs[i].spec.priority));
    ranks.push_back(rank);
    ASSIGN_OR_RETURN(const JobId e,
                     ReplayLocked(who, reqs[i], "jobs[" + std::to_string(i) + "]: "));
    earlier.push_back(e);
  }
  std::vector<store::BatchItem> items;
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    store::BatchItem item;
    item.created = earlier[i] == 0;
    item.id = item.created ? InsertLocked(who, reqs[i], ranks[i], std::nullopt, std::nullopt)
                           : earlier[i];
    item.state = cluster_->jobs_.at(item.id).state;
    items.push_back(item);
  }
  return items;
}

StatusOr<store::ArrayResult> MemoryQueueStore::SubmitArray(const Principal& who,
                                                           const store::ArrayRequest& req) {
  ASSIGN_OR_RETURN(const std::vector<int> indices, Indices(req));
  ASSIGN_OR_RETURN(const int rank, model::PriorityRank(req.task.spec.priority));
  MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  RETURN_IF_ERROR(CheckDependenciesLocked(who, {&req.task.spec}));
  const auto& key = req.task.idempotency_key;
  if (key) {
    const auto it = c.array_keys_.find({who.team_id, *key});
    if (it != c.array_keys_.end()) {
      if (c.arrays_.at(it->second).request_sha256 != req.task.request_sha256) {
        return Conflict("Idempotency-Key '" + *key + "' was already used by array " +
                        std::to_string(it->second) + " with a different request; use a new key");
      }
      return store::ArrayResult{SummaryLocked(it->second), false};
    }
  }
  // Task i waits for task i of another array (a sweep over the same indices, stage 2).
  std::map<int, JobId> paired;
  if (req.after_array_index) {
    const std::optional<model::TeamId> visible =
        who.role == store::Role::kAdmin ? std::nullopt : std::optional(who.team_id);
    if (!VisibleArrayLocked(*req.after_array_index, visible).ok()) {
      return FailedPrecondition(
          "array " + std::to_string(*req.after_array_index) + " does not exist",
          "after_array_index");
    }
    for (const auto& [id, job] : c.jobs_) {
      if (job.array_id == *req.after_array_index) paired[*job.array_index] = id;
    }
  }
  const std::int64_t id = c.next_id_++;
  MemoryCluster::Array& a = c.arrays_[id];
  a.team_id = who.team_id;
  a.team = who.team;
  a.user = who.user;
  a.name = req.task.spec.name;
  a.first = req.first;
  a.last = req.last;
  a.step = req.step;
  a.task_count = static_cast<int>(indices.size());
  a.max_running = req.max_running;
  a.created_at = c.clock_.Now();
  if (key) {
    a.request_sha256 = req.task.request_sha256;
    c.array_keys_[{who.team_id, *key}] = id;
  }
  for (int index : indices) {
    SubmitRequest t = req.task;
    t.idempotency_key.reset();  // the array's key covers its tasks
    t.spec.env["FRUGAL_ARRAY_ID"] = std::to_string(id);
    t.spec.env["FRUGAL_ARRAY_INDEX"] = std::to_string(index);
    if (const auto it = paired.find(index); it != paired.end()) t.spec.after.push_back(it->second);
    const JobId task = InsertLocked(who, t, rank, id, index);
    // Every pending task of a throttled array gets the throttle reason at submit (as the
    // SQL does): those past the room are not in the snapshot, so the engine never words it.
    Row& row = c.jobs_.at(task);
    if (req.max_running && row.state == JobState::kPending) {
      row.row.reason = "waiting: array " + std::to_string(id) + " runs at most " +
                       std::to_string(*req.max_running) + " task(s) at once";
    }
  }
  return store::ArrayResult{SummaryLocked(id), true};
}

StatusOr<store::ArraySummary> MemoryQueueStore::GetArray(
    std::int64_t id, std::optional<model::TeamId> visible_team) {
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  RETURN_IF_ERROR(VisibleArrayLocked(id, visible_team).status());
  return SummaryLocked(id);
}

StatusOr<int> MemoryQueueStore::CancelArray(std::int64_t id,
                                            std::optional<model::TeamId> visible_team,
                                            const std::string& actor) {
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  RETURN_IF_ERROR(VisibleArrayLocked(id, visible_team).status());
  int cancelled = 0;
  for (auto& [job_id, job] : cluster_->jobs_) {
    if (job.array_id != id || model::IsTerminal(job.state) || job.cancel_requested) continue;
    RETURN_IF_ERROR(CancelLocked(job, actor));
    ++cancelled;
  }
  return cancelled;
}

StatusOr<std::vector<JobId>> MemoryQueueStore::ArrayTasks(
    const std::vector<std::int64_t>& arrays, std::optional<model::TeamId> visible_team) {
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  std::vector<JobId> out;
  for (std::int64_t id : arrays) {
    RETURN_IF_ERROR(VisibleArrayLocked(id, visible_team).status());
    for (const auto& [job_id, job] : cluster_->jobs_) {
      if (job.array_id == id) out.push_back(job_id);
    }
  }
  return out;
}

StatusOr<store::JobPage> MemoryQueueStore::ListJobs(const store::JobFilter& f) {
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  const auto selected = [&](JobId id, const Row& j) {
    if (f.state && j.state != *f.state) return false;
    if (f.visible_team && j.row.team_id != *f.visible_team) return false;
    if (f.team && j.team != *f.team) return false;
    if (f.user && j.user != *f.user) return false;
    if (f.label) {
      const auto it = j.spec.labels.find(f.label->first);
      if (it == j.spec.labels.end() || it->second != f.label->second) return false;
    }
    if (f.before && id >= *f.before) return false;
    return !f.array || j.array_id == *f.array;
  };
  store::JobPage page;
  bool more = false;
  for (auto it = cluster_->jobs_.rbegin(); it != cluster_->jobs_.rend(); ++it) {  // newest first
    if (!selected(it->first, it->second)) continue;
    if (static_cast<int>(page.jobs.size()) >= f.limit) {
      more = true;
      break;
    }
    page.jobs.push_back(ViewLocked(it->second));
  }
  if (more && !page.jobs.empty()) page.next_cursor = page.jobs.back().id;
  return page;
}

StatusOr<store::QueuePosition> MemoryQueueStore::PendingAhead(JobId id) {
  const MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  const auto it = c.jobs_.find(id);
  if (it == c.jobs_.end() || it->second.state != model::JobState::kPending)
    return NotFound("job " + std::to_string(id) + " is not pending");
  const int rank = it->second.row.priority_rank;
  store::QueuePosition out;
  for (const auto& [other, row] : c.jobs_) {
    if (row.state != model::JobState::kPending || other == id) continue;
    if (row.row.priority_rank < rank) ++out.higher_pending;
    if (row.row.priority_rank == rank) ++out.same_class_pending;
  }
  return out;
}

StatusOr<store::JobDetail> MemoryQueueStore::GetJob(JobId id,
                                                    std::optional<model::TeamId> visible_team) {
  const MemoryCluster& c = *cluster_;
  std::lock_guard<std::mutex> lock(c.mu_);
  ASSIGN_OR_RETURN(const Row* job, VisibleJobLocked(id, visible_team));
  store::JobDetail d;
  d.job = ViewLocked(*job);
  for (const auto& [attempt_id, a] : c.attempts_) {
    if (a.row.job_id != id) continue;
    model::Attempt at;
    at.id = attempt_id;
    at.job_id = id;
    at.number = a.number;
    at.rank = a.rank;
    at.node_id = a.row.node_id;
    at.node = a.row.node_name;
    if (const auto p = c.pools_.find(a.row.pool_id); p != c.pools_.end()) at.pool = p->second.name;
    at.gpus = a.row.gpus;
    at.started_at = a.row.started_at;
    at.ended_at = a.ended_at;
    at.end_reason = a.end_reason;
    d.attempts.push_back(std::move(at));
  }
  std::sort(d.attempts.begin(), d.attempts.end(), [](const auto& x, const auto& y) {
    return std::tie(x.number, x.rank) < std::tie(y.number, y.rank);
  });
  d.events = job->events;
  return d;  // no checkpoints here: latest_checkpoint stays unset
}

StatusOr<model::Job> MemoryQueueStore::CancelJob(JobId id,
                                                 std::optional<model::TeamId> visible_team,
                                                 const std::string& actor) {
  std::lock_guard<std::mutex> lock(cluster_->mu_);
  ASSIGN_OR_RETURN(Row * job, VisibleJobLocked(id, visible_team));
  RETURN_IF_ERROR(CancelLocked(*job, actor));
  return ViewLocked(*job);
}

}  // namespace frugal::testing
