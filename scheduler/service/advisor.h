// Answers about placement that are not a cycle: what a job would cost before it is
// submitted (submit --dry-run, the deadline check at submit; SubmitService) and why a job
// waits or runs where it does (`frugal why`). Reads the store, asks the pure policy code;
// changes nothing. Part of the service layer (decision 0043): it uses nothing of the engine.
// Thread-safe: the store is, and the policy code is pure.
#pragma once

#include <optional>
#include <string>

#include "scheduler/policy/policy_config.h"
#include "scheduler/policy/placement/priority.h"
#include "scheduler/policy/placement/quote.h"
#include "scheduler/store/job_store.h"

namespace frugal::service {

struct Why {
  std::optional<policy::PriorityFactors> factors;  // pending and ready jobs only
  std::string factors_text;                        // ExplainPriority of them
  std::string priority_class;
  int higher_pending = 0;  // pending jobs of higher classes, which go first
  int same_class_pending = 0;  // other pending jobs of its class, ordered by score
  // The learned spot controller's priced options (deadline jobs, spot pools with a model).
  std::vector<policy::SpotOutlook> spot;
  Micros on_demand_cost = 0;  // the cheapest allowed on-demand pool's expected cost; 0: none
  std::string on_demand_pool;
};

// Quotes made against one reading of the pools, at the database's time of that reading.
struct Quotes {
  Timestamp now{};
  std::vector<policy::Quote> quotes;  // in the order of the specs asked about
};

class Advisor {
 public:
  // `book`: the learned spot controller's tables (may be null; must outlive the advisor).
  // `window`: the pending jobs the engine's full cycle reads (EngineOptions::pending), so
  // `why` ranks a job among the jobs the engine itself weighs.
  Advisor(store::JobStore& store, policy::PolicyConfig config,
          const policy::SpotBook* book = nullptr, store::PendingWindow window = {})
      : store_(store), config_(std::move(config)), book_(book), window_(window) {}

  // The quotes for `specs`, in order, against one reading of the pools and the database's
  // now() (AdminStore::ReadPools, made by the caller: SubmitService checks deadlines at its
  // time first), so a batch is quoted against one state of the capacity. Pure.
  StatusOr<Quotes> QuoteAll(const std::vector<model::JobSpec>& specs,
                            const store::PoolReading& reading) const;
  // Why `job` waits: its priority factors as the engine's cycle computes them (over the
  // engine's window of pending jobs, with `job` added when the window does not reach it),
  // how many pending jobs go before it (counted in the database, not in a snapshot), and
  // its priced spot options. A job that is not pending gets an empty Why.
  StatusOr<Why> Explain(model::JobId job) const;

  const policy::PolicyConfig& config() const { return config_; }

 private:
  store::JobStore& store_;
  const policy::PolicyConfig config_;
  const policy::SpotBook* book_;
  const store::PendingWindow window_;
};

}  // namespace frugal::service
