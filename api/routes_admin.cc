// Admin routes: teams, pools, quotas and token creation. Admin role only. Every change is
// audited by the store, with the caller as the actor.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/crypto.h"
#include "common/money.h"
#include "scheduler/store/pool_json.h"

namespace frugal::api {

void RegisterAdminRoutes(Router& s, Context& ctx) {
  s.Post(R"(/v1/admin/teams/([^/]+)/quota)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          ASSIGN_OR_RETURN(json body, ParseObject(req.body));
          ASSIGN_OR_RETURN(auto quota, DecodeQuota(body));
          ASSIGN_OR_RETURN(auto saved, ctx.store.SetQuota(*who, team, quota));
          ctx.engine.Kick();  // a raised quota may admit waiting jobs now
          return Reply{200, EncodeQuota(team, saved)};
        }));
  s.Get(R"(/v1/admin/teams/([^/]+)/quota)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          ASSIGN_OR_RETURN(auto quota, ctx.store.GetQuota(team));
          return Reply{200, EncodeQuota(team, quota)};
        }));

  s.Post("/v1/admin/pools", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who)
                                                           -> StatusOr<Reply> {
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           ASSIGN_OR_RETURN(auto pool, DecodePool(body));
           ASSIGN_OR_RETURN(auto saved, ctx.store.UpsertPool(*who, pool));
           return Reply{200, EncodePool(saved)};
         }));

  s.Get("/v1/admin/pools", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&)
                                                          -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto pools, ctx.store.ListPools());
          json out = json::array();
          for (const auto& p : pools) out.push_back(EncodePool(p));
          return Reply{200, {{"pools", out}}};
        }));

  s.Post("/v1/admin/teams", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who)
                                                           -> StatusOr<Reply> {
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           RETURN_IF_ERROR(CheckFields(body, {"name"}));
           ASSIGN_OR_RETURN(std::string name, RequiredString(body, "name"));
           RETURN_IF_ERROR(ValidateName(name, "name", false));
           ASSIGN_OR_RETURN(auto team, ctx.store.CreateTeam(*who, name));
           return Reply{201, {{"id", team.id}, {"name", team.name}}};
         }));

  s.Get("/v1/admin/teams", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&)
                                                          -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto teams, ctx.store.ListTeams());
          json out = json::array();
          for (const auto& t : teams) out.push_back({{"id", t.id}, {"name", t.name}});
          return Reply{200, {{"teams", out}}};
        }));

  s.Post("/v1/admin/tokens", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who)
                                                            -> StatusOr<Reply> {
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           RETURN_IF_ERROR(CheckFields(body, {"team", "user", "role"}));
           ASSIGN_OR_RETURN(std::string team, RequiredString(body, "team"));
           ASSIGN_OR_RETURN(std::string user, RequiredString(body, "user"));
           ASSIGN_OR_RETURN(std::string role_text, RequiredString(body, "role"));
           RETURN_IF_ERROR(ValidateName(team, "team", false));
           RETURN_IF_ERROR(ValidateName(user, "user", true));
           ASSIGN_OR_RETURN(auto role, store::ParseRole(role_text));
           const std::string token = NewToken();
           ASSIGN_OR_RETURN(auto issued, ctx.store.CreateToken(*who, team, user, role, Sha256Hex(token)));
           spdlog::info(R"("event":"token_created","token_id":{},"role":"{}","team":"{}","by":"{}")",
                        issued.id, role_text, team, who->user);
           // The only time the token is ever shown.
           return Reply{201, {{"id", issued.id}, {"token", token}, {"role", role_text},
                              {"team", team}, {"user", user}}};
         }));
  RegisterAdminAuditRoutes(s, ctx);
  RegisterNodeRoutes(s, ctx);
  RegisterAvailabilityRoutes(s, ctx);
}

}  // namespace frugal::api
