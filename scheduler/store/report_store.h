// The ReportStore port: the read-only views of what happened, for GET /metrics and the
// dashboard. Reads only; each method is one transaction (LoadMetrics a REPEATABLE READ one,
// so its figures agree). Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <vector>

#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"
#include "scheduler/store/dashboard_views.h"
#include "scheduler/store/store_metrics.h"

namespace frugal::store {

class ReportStore {
 public:
  virtual ~ReportStore() = default;

  // --- metrics ---
  // The database's figures for GET /metrics, read in one REPEATABLE READ transaction so
  // they agree with each other.
  virtual StatusOr<StoreMetrics> LoadMetrics() = 0;

  // --- dashboard views (dashboard_views.h) ---
  // The latest `limit` attempts that ended preempted or node_lost, newest first, each with
  // the job's next attempt (its recovery) if one started; only `team`'s when set.
  virtual StatusOr<std::vector<Interruption>> RecentInterruptions(
      std::optional<model::TeamId> team, int limit) = 0;
  // A job's attempts (pool, node, cost) and checkpoints. NotFound as GetJob.
  virtual StatusOr<store::JobTimeline> JobTimeline(model::JobId id,
                                                   std::optional<model::TeamId> visible_team) = 0;
  // The timeline in short of each of `ids` that has an attempt (jobs without one are
  // absent), in one query: the jobs list shows a page's pools and costs without one
  // timeline per row. No visibility check: pass ids the caller may see (a ListJobs page).
  virtual StatusOr<std::map<model::JobId, JobSummary>> JobSummaries(
      const std::vector<model::JobId>& ids) = 0;
};

}  // namespace frugal::store
