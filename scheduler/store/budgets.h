// Budget values the store reads and writes (decision 0010): a team's budget as admins set
// it, its status in a period, and its alerts with their webhook delivery state. The
// JobStore port (job_store.h) declares the methods; pg/pg_store_budgets.cc implements them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/budget.h"

namespace frugal::store {

// A team's budget as admins write it. Periods are UTC calendar periods: a month from its
// first day, a week from its Monday (ISO). Thresholds are whole percents 1..100, ascending.
struct BudgetSpec {
  model::BudgetPeriod period = model::BudgetPeriod::kMonthly;
  Micros limit = 0;               // > 0
  std::vector<int> alert_at_pct;  // e.g. {50, 80, 100}; empty: no alerts
  bool hard = false;              // stop new paid capacity at the limit
  std::string webhook_url;        // http(s) URL the alerts are POSTed to; empty: none
};

// One alert: a threshold crossed once in one period, with its webhook delivery state.
struct BudgetAlert {
  std::int64_t id = 0;
  std::string team;
  Timestamp period_start{};
  int threshold_pct = 0;
  Micros limit = 0;
  Micros used = 0;  // spent + committed when it fired
  Timestamp fired_at{};
  // "none" (no webhook), "pending" (to send or retry), "delivered", "failed" (gave up).
  std::string delivery_state;
  int delivery_attempts = 0;
  std::string last_error;
};

// A team's budget in the period that holds `at`.
struct BudgetStatus {
  std::string team;
  BudgetSpec spec;
  Timestamp period_start{};
  Timestamp period_end{};  // exclusive
  Micros spent = 0;        // actual: priced paid usage in the period so far
  Micros committed = 0;    // expected remaining cost of running paid attempts
  Micros used() const { return spent + committed; }
  Micros left() const { return spec.limit - used(); }  // negative when over
  std::vector<BudgetAlert> alerts;  // this period's, oldest first
};

// An alert to POST: claimed by one dispatcher at a time (the claim pushes its next try
// out), then recorded as delivered or failed.
struct AlertDelivery {
  std::int64_t alert_id = 0;
  std::string url;
  std::string payload;  // the JSON body, fixed when the alert fired
  int attempt = 0;      // 1 for the first try
};

}  // namespace frugal::store
