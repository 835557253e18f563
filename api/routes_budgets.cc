// Team budgets (decision 0010): admins set and read them; researchers read their own
// team's status (spent, committed, left, this period's alerts). Money is a decimal string.
#include <algorithm>

#include "api/routes.h"
#include "api/webhook_sender.h"
#include "common/money.h"

namespace frugal::api {

void RegisterBudgetRoutes(Router& s, Context& ctx) {
  s.Post(R"(/v1/admin/teams/([^/]+)/budget)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           const std::string team = req.matches[1];
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           ASSIGN_OR_RETURN(auto budget, DecodeBudget(body));
           if (body.contains("webhook_url") && !body["webhook_url"].is_null())
             RETURN_IF_ERROR(CheckWebhookUrl(budget.webhook_url));
           ASSIGN_OR_RETURN(auto saved, ctx.store.SetBudget(*who, team, budget));
           ctx.engine.Kick();  // a raised limit may admit held jobs now
           return Reply{200, EncodeBudgetSpec(team, saved, true)};
         }));
  s.Get(R"(/v1/admin/teams/([^/]+)/budget)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          ASSIGN_OR_RETURN(auto budget, ctx.store.GetBudget(team));
          return Reply{200, EncodeBudgetSpec(team, budget, true)};
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
          return Reply{200, EncodeBudgetStatus(status, admin)};
        }));
}

}  // namespace frugal::api

namespace frugal::api {

}  // namespace frugal::api
