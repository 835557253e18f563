// Team budgets as the policy sees them: money per period (a UTC calendar month or ISO week)
// and what the team has used of it so far. The store computes `spent` (priced usage on paid
// capacity in the period) and `committed` (what the team's running paid attempts are still
// expected to cost); the policy only adds and compares. Pure value types.
#pragma once

#include <string>

#include "common/money.h"
#include "common/status.h"

namespace frugal::model {

enum class BudgetPeriod { kMonthly, kWeekly };

inline const char* ToString(BudgetPeriod p) {
  return p == BudgetPeriod::kWeekly ? "weekly" : "monthly";
}

inline StatusOr<BudgetPeriod> ParseBudgetPeriod(const std::string& s) {
  if (s == "monthly") return BudgetPeriod::kMonthly;
  if (s == "weekly") return BudgetPeriod::kWeekly;
  return InvalidArgument("period must be monthly or weekly, not '" + s.substr(0, 32) + "'",
                         "period");
}

// A team's budget in the current period. Reserved capacity is already paid for: neither
// its usage nor its jobs count here, and a hard limit never closes it.
struct TeamBudget {
  std::string team;  // the name, for reasons a user reads
  BudgetPeriod period = BudgetPeriod::kMonthly;
  Micros limit = 0;
  Micros spent = 0;      // actual: ledger + running attempts, paid capacity, this period
  Micros committed = 0;  // expected remaining cost of the team's running paid attempts
  bool hard = false;     // true: no new paid capacity once a job would not fit
  Micros used() const { return spent + committed; }
};

}  // namespace frugal::model
