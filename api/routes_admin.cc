// Admin routes: teams, pools, quotas and token creation. Admin role only. Every change is
// audited by the store, with the caller as the actor.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/crypto.h"
#include "common/money.h"
#include "scheduler/store/pool_json.h"

namespace frugal::api {

json EncodePool(const model::Pool& p) {
  json out = store::PoolSettingsJson(p);
  out["id"] = p.id;
  out["name"] = p.name;
  // What the store learned from the pool's node history.
  out["preemption_rate_per_node_hour"] = p.preemption_rate_per_node_hour;
  out["mean_outage_hours"] = p.mean_outage_hours;
  // What it has now, beside what it may grow to (max_gpus) and what is paid (committed_gpus).
  out["live_gpus"] = p.live_gpus;
  out["largest_node_gpus"] = p.largest_node_gpus;
  return out;
}

StatusOr<model::Pool> DecodePool(const json& body) {
  RETURN_IF_ERROR(CheckFields(body, {"name", "capacity_kind", "gpu_type", "gpu_mem_gb", "speed",
                                     "price_per_gpu_hour", "max_gpus", "startup_delay_seconds",
                                     "idle_timeout_seconds", "preemption_prior_per_node_hour",
                                     "committed_gpus"}));
  model::Pool p;
  ASSIGN_OR_RETURN(p.name, RequiredString(body, "name"));
  RETURN_IF_ERROR(ValidateName(p.name, "name", false));
  ASSIGN_OR_RETURN(std::string kind, RequiredString(body, "capacity_kind"));
  ASSIGN_OR_RETURN(p.kind, model::ParseCapacityKind(kind));
  ASSIGN_OR_RETURN(p.gpu_type, RequiredString(body, "gpu_type"));
  if (p.gpu_type.empty() || p.gpu_type.size() > 64) {
    return InvalidArgument("gpu_type: 1 to 64 characters", "gpu_type");
  }
  ASSIGN_OR_RETURN(p.gpu_mem_gb, RequiredInt(body, "gpu_mem_gb", 1, 4096));
  ASSIGN_OR_RETURN(p.max_gpus, RequiredInt(body, "max_gpus", 0, 1000000));
  // Money travels as a decimal string ("2.48"), never a float.
  ASSIGN_OR_RETURN(std::string price, RequiredString(body, "price_per_gpu_hour"));
  auto micros = ParseDollars(price);
  if (!micros.ok()) {
    return InvalidArgument("price_per_gpu_hour: " + micros.status().message(), "price_per_gpu_hour");
  }
  p.price_per_gpu_hour = *micros;
  if (body.contains("speed")) {
    if (!body["speed"].is_number() || body["speed"].get<double>() <= 0 ||
        body["speed"].get<double>() > 100) {
      return InvalidArgument("speed: must be a number in (0, 100]", "speed");
    }
    p.speed = body["speed"].get<double>();
  }
  if (body.contains("startup_delay_seconds")) {
    ASSIGN_OR_RETURN(auto s, RequiredInt(body, "startup_delay_seconds", 0, 86400));
    p.startup_delay = Seconds(s);
  }
  if (body.contains("idle_timeout_seconds")) {
    ASSIGN_OR_RETURN(auto s, RequiredInt(body, "idle_timeout_seconds", 0, 30 * 86400));
    p.idle_timeout = Seconds(s);
  }
  if (body.contains("preemption_prior_per_node_hour")) {
    const json& v = body["preemption_prior_per_node_hour"];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1000) {
      return InvalidArgument("preemption_prior_per_node_hour: must be a number in [0, 1000]",
                             "preemption_prior_per_node_hour");
    }
    if (p.kind != model::CapacityKind::kSpot && v.get<double>() > 0) {
      return InvalidArgument("preemption_prior_per_node_hour: only spot pools are preempted",
                             "preemption_prior_per_node_hour");
    }
    p.preemption_prior_per_node_hour = v.get<double>();
  }
  if (body.contains("committed_gpus")) {
    ASSIGN_OR_RETURN(p.committed_gpus, RequiredInt(body, "committed_gpus", 0, 1000000));
    if (p.committed_gpus > 0 && p.kind != model::CapacityKind::kReserved) {
      return InvalidArgument("committed_gpus: only reserved pools are paid for unused; an " +
                                 std::string(model::ToString(p.kind)) +
                                 " pool is paid for the GPUs its jobs use",
                             "committed_gpus");
    }
  }
  return p;
}

json EncodeQuota(const std::string& team, const store::QuotaSpec& q) {
  json out = {{"team", team}, {"pools", json::object()}};
  for (auto kind : {model::CapacityKind::kReserved, model::CapacityKind::kOnDemand,
                    model::CapacityKind::kSpot}) {
    auto it = q.by_kind.find(kind);
    out[std::string(model::ToString(kind)) + "_gpus"] =
        it == q.by_kind.end() ? json(nullptr) : json(it->second);
  }
  for (const auto& [pool, max] : q.by_pool) out["pools"][pool] = max;
  return out;
}

// {"reserved_gpus","on_demand_gpus","spot_gpus": N or null (no limit), "pools": {name: N}}
StatusOr<store::QuotaSpec> DecodeQuota(const json& body) {
  RETURN_IF_ERROR(CheckFields(body, {"reserved_gpus", "on_demand_gpus", "spot_gpus", "pools"}));
  store::QuotaSpec q;
  for (auto kind : {model::CapacityKind::kReserved, model::CapacityKind::kOnDemand,
                    model::CapacityKind::kSpot}) {
    const std::string field = std::string(model::ToString(kind)) + "_gpus";
    if (!body.contains(field) || body[field].is_null()) continue;
    ASSIGN_OR_RETURN(auto n, RequiredInt(body, field.c_str(), 0, 1000000));
    q.by_kind[kind] = static_cast<int>(n);
  }
  if (body.contains("pools")) {
    const json& pools = body["pools"];
    if (!pools.is_object()) return InvalidArgument("pools: must be an object {pool: GPUs}", "pools");
    if (pools.size() > 256) return InvalidArgument("pools: at most 256 entries", "pools");
    for (const auto& [name, v] : pools.items()) {
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1000000)
        return InvalidArgument("pools." + name.substr(0, 64) + ": must be an integer 0..1000000",
                               "pools");
      RETURN_IF_ERROR(ValidateName(name, "pools", false));
      q.by_pool[name] = v.get<int>();
    }
  }
  return q;
}

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
