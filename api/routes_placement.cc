// Placement advice over HTTP: the quote behind `frugal submit --dry-run` and the deadline
// check at submit, and `GET /v1/jobs/{id}/why` behind `frugal why`.
#include "api/routes.h"
#include "common/money.h"

namespace frugal::api {

void RegisterPlacementRoutes(Router& s, Context& ctx) {
  s.Get(R"(/v1/jobs/([^/]+)/why)", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                                      auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
          ASSIGN_OR_RETURN(auto detail, ctx.store.GetJob(id, VisibleTeam(*who)));
          json out = {{"id", id},
                      {"state", model::ToString(detail.job.state)},
                      {"reason", detail.job.reason},
                      {"priority", detail.job.spec.priority}};
          if (!detail.attempts.empty()) {
            const auto& a = detail.attempts.back();
            out["last_attempt"] = {{"node", a.node}, {"pool", a.pool}, {"number", a.number}};
          }
          if (detail.job.state == model::JobState::kPending) {
            ASSIGN_OR_RETURN(auto why, ctx.advisor.Explain(id));
            out["higher_priority_pending"] = why.higher_pending;
            out["same_priority_pending"] = why.same_class_pending;
            if (why.factors) {
              out["factors"] = {{"age", why.factors->age},
                                {"fair_share", why.factors->fair_share},
                                {"urgency", why.factors->urgency},
                                {"size", why.factors->size},
                                {"score", why.factors->score}};
              out["factors_text"] = why.factors_text;
            }
            // The learned spot controller's priced options (issue 14).
            out["options"] = EncodeOutlooks(why.spot);
            if (!why.on_demand_pool.empty())
              out["on_demand"] = {{"pool", why.on_demand_pool},
                                  {"expected_cost", FormatDollars(why.on_demand_cost, true)}};
          }
          return Reply{200, out};
        }));
}

}  // namespace frugal::api
