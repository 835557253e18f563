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

class Advisor {
 public:
  // `book`: the learned spot controller's tables (may be null; must outlive the advisor).
  Advisor(store::JobStore& store, policy::PolicyConfig config,
          const policy::SpotBook* book = nullptr)
      : store_(store), config_(std::move(config)), book_(book) {}

  // The quote for `spec` against the pools as they are now.
  StatusOr<policy::Quote> Quote(const model::JobSpec& spec, Timestamp now) const;
  // The quotes for `specs`, in order, against one reading of the pools (batch submit).
  StatusOr<std::vector<policy::Quote>> QuoteAll(const std::vector<model::JobSpec>& specs,
                                                Timestamp now) const;
  // Priority factors and queue position of `job` in a fresh snapshot.
  StatusOr<Why> Explain(model::JobId job, int max_pending) const;

  const policy::PolicyConfig& config() const { return config_; }

 private:
  store::JobStore& store_;
  const policy::PolicyConfig config_;
  const policy::SpotBook* book_;
};

}  // namespace frugal::service
