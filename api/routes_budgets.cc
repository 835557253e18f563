// Team budgets (decision 0010): admins set and read them; researchers read their own
// team's status (spent, committed, left, this period's alerts). Money is a decimal string.
#include <algorithm>

#include "api/routes.h"
#include "api/webhook_sender.h"
#include "common/money.h"

namespace frugal::api {

namespace {

json Money(Micros m) { return FormatDollars(m, true); }

json EncodeSpec(const std::string& team, const store::BudgetSpec& b, bool with_webhook) {
  json out = {{"team", team},
              {"period", model::ToString(b.period)},
              {"limit", Money(b.limit)},
              {"alert_at_pct", b.alert_at_pct},
              {"hard", b.hard}};
  if (with_webhook) out["webhook_url"] = b.webhook_url.empty() ? json(nullptr) : json(b.webhook_url);
  return out;
}

json EncodeAlert(const store::BudgetAlert& a) {
  return {{"id", a.id},
          {"threshold_pct", a.threshold_pct},
          {"limit", Money(a.limit)},
          {"used", Money(a.used)},
          {"fired_at", FormatRfc3339(a.fired_at)},
          {"period_start", FormatRfc3339(a.period_start)},
          {"delivery_state", a.delivery_state},
          {"delivery_attempts", a.delivery_attempts},
          {"last_error", a.last_error.empty() ? json(nullptr) : json(a.last_error)}};
}

json EncodeStatus(const store::BudgetStatus& st, bool admin) {
  json out = EncodeSpec(st.team, st.spec, admin);
  out["period_start"] = FormatRfc3339(st.period_start);
  out["period_end"] = FormatRfc3339(st.period_end);
  out["spent"] = Money(st.spent);
  out["committed"] = Money(st.committed);
  out["used"] = Money(st.used());
  out["left"] = Money(st.left());
  json alerts = json::array();
  for (const auto& a : st.alerts) alerts.push_back(EncodeAlert(a));
  out["alerts"] = alerts;
  return out;
}

}  // namespace

// {"period": "monthly"|"weekly", "limit": "20000.00", "alert_at_pct": [50, 80],
//  "hard": bool, "webhook_url": "http://..." or null}
StatusOr<store::BudgetSpec> DecodeBudget(const json& body) {
  RETURN_IF_ERROR(CheckFields(body, {"period", "limit", "alert_at_pct", "hard", "webhook_url"}));
  store::BudgetSpec b;
  if (body.contains("period")) {
    ASSIGN_OR_RETURN(std::string period, RequiredString(body, "period"));
    ASSIGN_OR_RETURN(b.period, model::ParseBudgetPeriod(period));
  }
  if (!body.contains("limit") || !body["limit"].is_string())
    return InvalidArgument("limit: required, a dollar amount as a string, e.g. \"20000.00\"",
                           "limit");
  auto limit = ParseDollars(body["limit"].get<std::string>(), /*allow_negative=*/true);
  if (!limit.ok()) return InvalidArgument("limit: " + limit.status().message(), "limit");
  if (*limit <= 0) return InvalidArgument("limit: must be more than 0 dollars", "limit");
  b.limit = *limit;
  if (body.contains("alert_at_pct")) {
    const json& a = body["alert_at_pct"];
    if (!a.is_array() || a.size() > 10)
      return InvalidArgument("alert_at_pct: an array of at most 10 whole percents", "alert_at_pct");
    for (const auto& v : a) {
      if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 100)
        return InvalidArgument("alert_at_pct: each threshold must be a whole percent from 1 to "
                               "100, not " + v.dump().substr(0, 32),
                               "alert_at_pct");
      b.alert_at_pct.push_back(v.get<int>());
    }
    std::sort(b.alert_at_pct.begin(), b.alert_at_pct.end());
    b.alert_at_pct.erase(std::unique(b.alert_at_pct.begin(), b.alert_at_pct.end()),
                         b.alert_at_pct.end());
  }
  if (body.contains("hard")) {
    if (!body["hard"].is_boolean()) return InvalidArgument("hard: must be true or false", "hard");
    b.hard = body["hard"].get<bool>();
  }
  if (body.contains("webhook_url") && !body["webhook_url"].is_null()) {
    ASSIGN_OR_RETURN(b.webhook_url, RequiredString(body, "webhook_url"));
    RETURN_IF_ERROR(CheckWebhookUrl(b.webhook_url));
  }
  return b;
}

void RegisterBudgetRoutes(Router& s, Context& ctx) {
  s.Post(R"(/v1/admin/teams/([^/]+)/budget)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           const std::string team = req.matches[1];
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           ASSIGN_OR_RETURN(auto budget, DecodeBudget(body));
           ASSIGN_OR_RETURN(auto saved, ctx.store.SetBudget(*who, team, budget));
           ctx.engine.Kick();  // a raised limit may admit held jobs now
           return Reply{200, EncodeSpec(team, saved, true)};
         }));
  s.Get(R"(/v1/admin/teams/([^/]+)/budget)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          ASSIGN_OR_RETURN(auto budget, ctx.store.GetBudget(team));
          return Reply{200, EncodeSpec(team, budget, true)};
        }));
  s.Get(R"(/v1/teams/([^/]+)/budget)",
        Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          const bool admin = who->role == store::Role::kAdmin;
          // Another team's budget is as invisible as its jobs: the same 404 as a missing team.
          if (!admin && team != who->team)
            return NotFound("team '" + team.substr(0, 64) + "' does not exist");
          ASSIGN_OR_RETURN(auto status, ctx.store.GetBudgetStatus(team, std::nullopt));
          return Reply{200, EncodeStatus(status, admin)};
        }));
}

}  // namespace frugal::api

namespace frugal::api {

void EncodeOutlook(const policy::Quote& quote, const std::optional<store::BudgetStatus>& budget,
                   json& out) {
  if (const auto* p = quote.RecommendedPool()) {
    out["expected_cost"] = Money(p->expected_cost);
    out["expected_pool"] = p->pool;
    // Reserved capacity is already paid for: it charges no budget.
    out["expected_budget_charge"] =
        Money(p->kind == model::CapacityKind::kReserved ? 0 : p->expected_cost);
  }
  if (budget) {
    out["budget"] = {{"period", model::ToString(budget->spec.period)},
                     {"limit", Money(budget->spec.limit)},
                     {"used", Money(budget->used())},
                     {"left", Money(budget->left())},
                     {"hard", budget->spec.hard}};
  }
}

}  // namespace frugal::api
