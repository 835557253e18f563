// Cost reports: GET /v1/reports/cost?by=team|project|user|pool|job&from=&to=. Researchers
// see their own team's money; admins see everything, plus pool utilisation.
#include <algorithm>

#include "api/routes.h"
#include "common/money.h"

namespace frugal::api {

namespace {

StatusOr<std::optional<Timestamp>> OptionalTime(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::optional<Timestamp>();
  auto t = ParseRfc3339(req.get_param_value(name));
  if (!t.ok()) return InvalidArgument(std::string(name) + ": " + t.status().message(), name);
  return std::optional<Timestamp>(*t);
}

// Guardrails: advice for the window's ended jobs (largest saving first) and its total.
StatusOr<json> RightSizingReport(Context& ctx, const store::CostQuery& q) {
  ASSIGN_OR_RETURN(auto usage, ctx.costs.EndedJobUsage(q));
  ASSIGN_OR_RETURN(auto pool_list, ctx.store.ListPools());
  std::vector<std::pair<model::JobId, policy::RightSizing>> advice;
  Micros total = 0;
  for (const auto& u : usage) {
    if (auto a = policy::AdviseRightSizing(u, pool_list)) {
      total += a->saving;
      advice.emplace_back(u.job_id, *a);
    }
  }
  std::stable_sort(advice.begin(), advice.end(), [](const auto& x, const auto& y) {
    return x.second.saving != y.second.saving ? x.second.saving > y.second.saving
                                              : x.first < y.first;
  });
  json jobs = json::array();
  for (const auto& [id, a] : advice) {
    json j = EncodeRightSizing(a);
    j["job_id"] = id;
    jobs.push_back(std::move(j));
  }
  return json{{"jobs", jobs},
              {"potential_saving", FormatDollars(total, true)},
              {"potential_saving_micros", total}};
}

}  // namespace

void RegisterReportRoutes(Router& s, Context& ctx) {
  s.Get("/v1/reports/cost", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                               auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {"by", "from", "to"}));
          store::CostQuery q;
          if (req.has_param("by")) {
            ASSIGN_OR_RETURN(q.by, store::ParseCostDimension(req.get_param_value("by")));
          }
          ASSIGN_OR_RETURN(q.from, OptionalTime(req, "from"));
          ASSIGN_OR_RETURN(q.to, OptionalTime(req, "to"));
          if (q.from && q.to && *q.to < *q.from)
            return InvalidArgument("to must not be before from", "to");
          q.team = VisibleTeam(*who);
          ASSIGN_OR_RETURN(auto rep, ctx.costs.Cost(q));
          json rows = json::array();
          for (const auto& r : rep.rows) rows.push_back(EncodeCostRow(r));
          json pools = json::array();
          for (const auto& p : rep.pools) {
            pools.push_back({{"pool", p.pool},
                             {"capacity_kind", p.capacity_kind},
                             {"busy_gpu_hours", p.busy_gpu_hours},
                             {"paid_gpu_hours", p.paid_gpu_hours},
                             {"utilisation", p.paid_gpu_hours > 0
                                                 ? json(p.busy_gpu_hours / p.paid_gpu_hours)
                                                 : json(nullptr)},
                             {"spend", FormatDollars(p.spend, true)},
                             {"idle_reserved", FormatDollars(p.idle_reserved, true)}});
          }
          ASSIGN_OR_RETURN(json right_sizing, RightSizingReport(ctx, q));
          return Reply{200, {{"by", store::ToString(q.by)},
                             {"from", FormatRfc3339(rep.from)},
                             {"to", FormatRfc3339(rep.to)},
                             {"rows", rows},
                             {"total", EncodeCostRow(rep.total)},
                             {"pools", pools},
                             {"right_sizing", right_sizing}}};
        }));
}

}  // namespace frugal::api
