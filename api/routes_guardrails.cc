// Guardrails (docs/decisions/0012-guardrails.md): admin settings, team idle policies and
// approvals (admin only), plus what the job and report routes use: the submit-time rules
// and right-sizing advice.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/money.h"
#include "scheduler/policy/guardrails/guardrails.h"

namespace frugal::api {

StatusOr<json> JobRightSizing(Context& ctx, const store::JobDetail& d) {
  if (!model::IsTerminal(d.job.state)) return json(nullptr);
  model::JobUsage usage{d.job.id, d.job.spec.tolerance, {}};
  for (const auto& a : d.attempts) {
    if (!a.ended_at) continue;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(*a.ended_at - a.started_at).count();
    usage.runs.push_back({a.pool, a.gpus, ms, a.peak_gpu_mem_mb});
  }
  ASSIGN_OR_RETURN(auto pools, ctx.store.ListPools());
  auto advice = policy::AdviseRightSizing(usage, pools);
  return advice ? EncodeRightSizing(*advice) : json(nullptr);
}

void RegisterGuardrailRoutes(Router& s, Context& ctx) {
  s.Get("/v1/admin/guardrails", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                                                 auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto settings, ctx.store.GetGuardrails());
          return Reply{200, EncodeSettings(settings)};
        }));

  s.Post("/v1/admin/guardrails", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                                                  auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           ASSIGN_OR_RETURN(auto settings, ctx.store.GetGuardrails());
           RETURN_IF_ERROR(MergeSettings(body, settings));
           ASSIGN_OR_RETURN(auto saved, ctx.store.SetGuardrails(*who, settings));
           return Reply{200, EncodeSettings(saved)};
         }));

  s.Get(R"(/v1/admin/teams/([^/]+)/idle-policy)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          ASSIGN_OR_RETURN(auto policy, ctx.store.GetTeamIdlePolicy(team));
          return Reply{200, {{"team", team}, {"idle_policy", model::ToString(policy)}}};
        }));

  s.Post(R"(/v1/admin/teams/([^/]+)/idle-policy)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           const std::string team = req.matches[1];
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           RETURN_IF_ERROR(CheckFields(body, {"idle_policy"}));
           ASSIGN_OR_RETURN(std::string text, RequiredString(body, "idle_policy"));
           ASSIGN_OR_RETURN(auto policy, model::ParseIdlePolicy(text));
           ASSIGN_OR_RETURN(auto saved, ctx.store.SetTeamIdlePolicy(*who, team, policy));
           return Reply{200, {{"team", team}, {"idle_policy", model::ToString(saved)}}};
         }));

  s.Post(R"(/v1/admin/jobs/([^/]+)/approve)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
           if (!req.body.empty()) {
             ASSIGN_OR_RETURN(json body, ParseObject(req.body));
             RETURN_IF_ERROR(CheckFields(body, {}));
           }
           ASSIGN_OR_RETURN(auto job, ctx.store.ApproveJob(*who, id));
           spdlog::info(R"("event":"job_approved","job_id":{},"by":"{}")", job.id, who->user);
           ctx.engine.Kick();
           return Reply{200, EncodeJob(job)};
         }));
}

}  // namespace frugal::api
