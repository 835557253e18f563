// Hard team budgets at admission (decision 0010). A team whose hard budget would be
// exceeded by a job's expected cost gets no new paid capacity (on-demand, spot); reserved
// capacity, already paid for, stays open. Like quotas, any policy's plan goes through
// EnforceBudgets before it is applied, and placement/cost skips paid options a team cannot
// afford so it looks for reserved capacity instead of waiting on a refusal. Pure.
#pragma once

#include <map>
#include <string>

#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy_config.h"

namespace frugal::policy {

class BudgetBook {
 public:
  explicit BudgetBook(const model::Snapshot& snapshot);

  // Empty if `team` may start a job expected to cost `cost` on `pool`; otherwise the reason,
  // e.g. "over budget: team vision used $19,850.00 of its $20,000.00 monthly hard limit;
  // this job's expected $412.00 does not fit; only reserved capacity is open".
  std::string Holding(model::TeamId team, const model::Pool& pool, Micros cost) const;
  bool Allows(model::TeamId team, const model::Pool& pool, Micros cost) const {
    return Holding(team, pool, cost).empty();
  }
  // Charges an admitted job's expected cost (paid pools only) to its team for this cycle.
  void Take(model::TeamId team, const model::Pool& pool, Micros cost);
  bool any_hard() const { return any_hard_; }

 private:
  const model::Snapshot& snapshot_;
  std::map<model::TeamId, Micros> taken_;  // expected cost admitted earlier in this cycle
  bool any_hard_ = false;
};

// The expected cost of running `job` from where it is on `pool` (what the ledger is
// expected to charge), the same figure placement/cost puts on its assignments.
Micros ExpectedCost(const model::PendingJob& job, const model::Pool& pool,
                    const PolicyConfig& config);

// Drops assignments to paid pools that would take a team over its hard budget (in plan
// order, a gang's parts together) and leaves those jobs waiting with the budget as the
// reason; a waiting job whose team cannot afford any paid pool it fits says so too.
// Then node requests for paid pools: each job a request names is charged like an admitted
// one, and a job the budget refuses comes off the request (its GPUs too; a request left
// with none is dropped) and waits with the budget as its reason, so no paid node starts for
// a job that could not use it. A request naming no jobs is dropped when every ready,
// unplaced job that could use its pool is held there (decision 0016).
// Fills in Assignment::expected_cost where a policy left it 0, so it is recorded.
void EnforceBudgets(const model::Snapshot& snapshot, model::Plan& plan,
                    const PolicyConfig& config = {});

// $1234567.8 -> "$1,234,567.80" (cents, rounded half away from zero).
std::string MoneyText(Micros m);

}  // namespace frugal::policy
