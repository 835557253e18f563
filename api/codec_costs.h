// The money side's JSON codec of the REST API v1: quotes and the learned controller's
// priced options, a submit's cost outlook, budget status and alerts, cost report rows,
// interruptions and right-sizing advice. Encoding only (nothing here is decoded from
// requests). Pure: no I/O, no clock. Money is a decimal string of dollars.
#pragma once

#include <optional>
#include <vector>

#include "api/codec_json.h"
#include "scheduler/policy/guardrails/guardrails.h"
#include "scheduler/policy/placement/quote.h"
#include "scheduler/store/budgets.h"
#include "scheduler/store/cost_store.h"
#include "scheduler/store/dashboard_views.h"

namespace frugal::api {

json EncodeQuote(const policy::Quote& quote);
json EncodeOutlooks(const std::vector<policy::SpotOutlook>& v);
// Adds to a submit response what the job is expected to cost (the quote's recommended pool)
// and, if the caller's team has a budget, what it had left before the job was stored.
void EncodeOutlook(const policy::Quote& quote, const std::optional<store::BudgetStatus>& budget,
                   json& out);
json EncodeBudgetAlert(const store::BudgetAlert& a);
// `admin`: with the webhook URL (EncodeBudgetSpec).
json EncodeBudgetStatus(const store::BudgetStatus& st, bool admin);
json EncodeCostRow(const store::CostRow& r);
// The dashboard's cost-over-time rows: key, spend and waste in micros (not a cost row).
json EncodeSeriesRows(const store::CostReport& rep);
json EncodeInterruption(const store::Interruption& x);
json EncodeRightSizing(const policy::RightSizing& advice);

}  // namespace frugal::api
