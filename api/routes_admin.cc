// Admin routes: teams and tokens. Admin role only.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/crypto.h"

namespace frugal::api {

namespace {

// Rejects fields of `body` not in `allowed`.
Status CheckFields(const json& body, std::initializer_list<const char*> allowed) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || it.key() == a;
    if (!ok) return InvalidArgument("unknown field '" + it.key().substr(0, 64) + "'", it.key().substr(0, 64));
  }
  return Status::Ok();
}

StatusOr<std::string> RequiredString(const json& body, const char* field) {
  if (!body.contains(field)) return InvalidArgument(std::string(field) + ": is required", field);
  if (!body[field].is_string()) {
    return InvalidArgument(std::string(field) + ": must be a string", field);
  }
  return body[field].get<std::string>();
}

}  // namespace

void RegisterAdminRoutes(httplib::Server& s, Context& ctx) {
  s.Post("/v1/admin/teams", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&)
                                                           -> StatusOr<Reply> {
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           RETURN_IF_ERROR(CheckFields(body, {"name"}));
           ASSIGN_OR_RETURN(std::string name, RequiredString(body, "name"));
           RETURN_IF_ERROR(ValidateName(name, "name", false));
           ASSIGN_OR_RETURN(auto team, ctx.store.CreateTeam(name));
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
           ASSIGN_OR_RETURN(auto issued, ctx.store.CreateToken(team, user, role, Sha256Hex(token)));
           spdlog::info(R"("event":"token_created","token_id":{},"role":"{}","team":"{}","by":"{}")",
                        issued.id, role_text, team, who->user);
           // The only time the token is ever shown.
           return Reply{201, {{"id", issued.id}, {"token", token}, {"role", role_text},
                              {"team", team}, {"user", user}}};
         }));
}

}  // namespace frugal::api
