// The KeeperStore port: the calls of the scheduler's background threads, never of the
// scheduling cycle or a request: budget alerts and their webhook outbox
// (engine/alert_dispatcher.h), availability refits (engine/availability_refitter.h) and
// planner statistics (engine/statistics_keeper.h). Thread-safe; each call is one
// transaction, or one per pool or table where it says so.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/store/budgets.h"
#include "scheduler/store/pool_availability.h"

namespace frugal::store {

class KeeperStore {
 public:
  virtual ~KeeperStore() = default;

  // Records an alert for every threshold a team has reached in the period holding `at`
  // (default: database now) and not yet recorded: one row per (team, period, threshold),
  // so each fires once even across restarts and schedulers. Returns the new ones. Each
  // cycle's ApplyPlan does this at now, in its own transaction; this form is for a chosen
  // time (a period's end in tests and tools). Leader only, as the engine's writes.
  virtual StatusOr<std::vector<BudgetAlert>> FireBudgetAlerts(std::optional<Timestamp> at) = 0;
  // Claims up to `limit` alerts whose webhook POST is due; a claim is not handed out
  // again for a minute, so concurrent dispatchers do not send one alert twice at once.
  virtual StatusOr<std::vector<AlertDelivery>> ClaimAlertDeliveries(int limit) = 0;
  // Records the outcome of a claimed POST. On failure the alert is retried after
  // `backoff` x 2^(attempt-1), or marked failed after `max_attempts` tries.
  virtual Status RecordAlertDelivery(std::int64_t alert_id, bool delivered,
                                     const std::string& error, int max_attempts,
                                     Seconds backoff) = 0;
  // Refits every spot pool: its imported counts plus the spells of its node lives (the
  // one still going on not ended), written as its fitted model. One transaction per pool;
  // slow (reads every node life), so never called from the scheduling cycle.
  virtual StatusOr<std::vector<RefitResult>> RefitAvailability() = 0;
  // Gathers planner statistics (ANALYZE) for each of the store's tables whose rows changed
  // by more than 50 + 10% since its statistics were last gathered, the threshold of
  // PostgreSQL's autovacuum, which looks only once a minute (decision 0040): at once where
  // the table has half or twice the rows its statistics say (or none were gathered), else
  // a minute after its last analysis (decision 0048). Returns the tables it analyzed. A table
  // another session is analyzing is skipped. Never called from the scheduling cycle.
  virtual StatusOr<std::vector<std::string>> RefreshStatistics() = 0;
};

}  // namespace frugal::store
