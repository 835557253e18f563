// Admin node routes (decision 0021): list, drain, undrain, remove. Admin role only; every
// change is audited by the store with the caller as the actor.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/log.h"

namespace frugal::api {

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
