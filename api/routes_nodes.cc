// Admin node routes (decision 0021): list, drain, undrain, remove. Admin role only; every
// change is audited by the store with the caller as the actor.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/log.h"

namespace frugal::api {

namespace {

json OptTime(const std::optional<Timestamp>& t) {
  return t ? json(FormatRfc3339(*t)) : json(nullptr);
}

// Whole seconds from `t` to the row's database time; null when there is no `t`.
json AgeSeconds(const std::optional<Timestamp>& t, Timestamp as_of) {
  if (!t) return nullptr;
  return std::chrono::duration_cast<Seconds>(as_of - *t).count();
}

}  // namespace

json EncodeNode(const store::NodeInfo& n) {
  return {{"id", n.id},
          {"name", n.name},
          {"pool", n.pool},
          {"gpus", n.gpus},
          {"gpu_type", n.gpu_type},
          {"gpu_mem_gb", n.gpu_mem_gb},
          {"state", n.state},
          {"drain", n.drain.empty() ? json(nullptr) : json(n.drain)},
          {"drained_by", n.drained_by ? json(*n.drained_by) : json(nullptr)},
          {"drained_at", OptTime(n.drained_at)},
          {"notice_at", OptTime(n.notice_at)},
          {"lease_epoch", n.lease_epoch},
          {"registered_at", FormatRfc3339(n.registered_at)},
          {"last_heartbeat_at", OptTime(n.last_heartbeat_at)},
          {"lease_expires_at", FormatRfc3339(n.lease_expires_at)},
          // The lease's age: seconds since a heartbeat last renewed it (since registration
          // when none has).
          {"lease_age_seconds",
           AgeSeconds(n.last_heartbeat_at ? n.last_heartbeat_at : n.registered_at, n.as_of)},
          {"running_attempts", n.running_attempts},
          {"gpu_utilization", n.gpu_utilization ? json(*n.gpu_utilization) : json(nullptr)},
          {"credential_issued_at", OptTime(n.credential_issued_at)},
          {"credential_age_seconds", AgeSeconds(n.credential_issued_at, n.as_of)}};
}

json EncodeInstance(const store::Instance& x) {
  return {{"id", x.id},
          {"pool", x.pool},
          {"node", x.node},
          {"instance_id", x.instance_id.empty() ? json(nullptr) : json(x.instance_id)},
          {"state", store::ToString(x.state)},
          {"leaked", x.leaked},
          {"gpus", x.gpus},
          {"price_per_gpu_hour", FormatDollars(x.rate_micros_per_gpu_hour)},
          {"requested_at", FormatRfc3339(x.requested_at)},
          {"created_at", OptTime(x.created_at)},
          {"registered_at", OptTime(x.registered_at)},
          {"ended_at", OptTime(x.ended_at)},
          {"reason", x.reason},
          {"detail", x.detail},
          {"cost", FormatDollars(x.cost_micros, true)},
          {"cost_micros", x.cost_micros}};
}

void RegisterNodeRoutes(Router& s, Context& ctx) {
  // The exec provider's cloud instances: those not gone, and with ?all=true every one ever
  // made, with what each cost and a total to hold against the cloud's bill.
  s.Get("/v1/admin/instances", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                                                 auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {"all"}));
          const std::string all = req.has_param("all") ? req.get_param_value("all") : "false";
          if (all != "true" && all != "false")
            return InvalidArgument("all must be true or false, got '" + all + "'", "all");
          json out = json::array();
          Micros total = 0;
          if (ctx.options.instances) {
            std::optional<Timestamp> since;
            if (all == "true") since = Timestamp{};
            ASSIGN_OR_RETURN(auto rows, ctx.options.instances->ListInstances(since));
            for (const auto& x : rows) {
              out.push_back(EncodeInstance(x));
              total += x.cost_micros;
            }
          }
          return Reply{200, {{"instances", out},
                             {"cost", FormatDollars(total, true)},
                             {"cost_micros", total}}};
        }));


  s.Get("/v1/admin/nodes", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&)
                                                          -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto nodes, ctx.store.ListNodes());
          json out = json::array();
          for (const auto& n : nodes) out.push_back(EncodeNode(n));
          return Reply{200, {{"nodes", out}}};
        }));

  using Change = StatusOr<store::NodeInfo> (store::JobStore::*)(const store::Principal&,
                                                                const std::string&);
  struct Action {
    const char* verb;
    Change change;
  };
  for (const Action a : {Action{"drain", &store::JobStore::DrainNode},
                         Action{"undrain", &store::JobStore::UndrainNode},
                         Action{"remove", &store::JobStore::RemoveNode}}) {
    s.Post(std::string(R"(/v1/admin/nodes/([^/]+)/)") + a.verb,
           Route(ctx, Access::kAdmin, [&ctx, a](const httplib::Request& req,
                                                auto& who) -> StatusOr<Reply> {
             RETURN_IF_ERROR(CheckQueryParams(req, {}));
             const std::string name = req.matches[1];
             RETURN_IF_ERROR(ValidateName(name, "node", true));
             ASSIGN_OR_RETURN(auto node, (ctx.store.*a.change)(*who, name));
             spdlog::info(R"("event":"node_{}","node":"{}","by":"{}","state":"{}","running_attempts":{})",
                          a.verb, JsonEscape(name), JsonEscape(who->user), node.state,
                          node.running_attempts);
             // Undrain (and a removal that requeued a lost node's jobs) may let jobs run now.
             ctx.engine.Kick();
             json out = EncodeNode(node);
             if (std::string(a.verb) == "remove") out["removed"] = true;
             return Reply{200, out};
           }));
  }
}

}  // namespace frugal::api
