// Placement advice over HTTP: the quote behind `frugal submit --dry-run` and the deadline
// check at submit, and `GET /v1/jobs/{id}/why` behind `frugal why`.
#include "api/routes.h"
#include "common/money.h"

namespace frugal::api {

namespace {

json OptTime(const std::optional<Timestamp>& t) {
  return t ? json(FormatRfc3339(std::chrono::time_point_cast<Seconds>(*t))) : json(nullptr);
}

}  // namespace

json EncodeOutlooks(const std::vector<policy::SpotOutlook>& v) {
  json out = json::array();
  for (const auto& o : v) {
    json e = {{"pool", o.pool}, {"ready", o.ready}, {"text", o.text},
              {"pool_state", {{"up", o.up}, {"spell_seconds", o.spell_seconds}}}};
    if (o.ready) {
      e["action"] = policy::ToString(o.action);
      e["expected_cost"] = FormatDollars(o.expected_cost, true);
      e["cost_sd"] = FormatDollars(o.cost_sd, true);
      e["expected_reclaims"] = o.reclaims;
      e["deadline_risk"] = o.deadline_risk;
      e["pool_state"]["hazard"] = o.hazard;
    }
    out.push_back(std::move(e));
  }
  return out;
}

json EncodeQuote(const policy::Quote& q) {
  json pools = json::array();
  for (const auto& p : q.pools) {
    json e = {{"pool", p.pool}, {"capacity_kind", model::ToString(p.kind)},
              {"gpu_type", p.gpu_type}, {"allowed", p.allowed}};
    if (!p.allowed) {
      e["why_not"] = p.why_not;
    } else {
      e["expected_cost"] = FormatDollars(p.expected_cost, true);
      e["cost_low"] = FormatDollars(p.low_cost, true);
      e["cost_high"] = FormatDollars(p.high_cost, true);
      e["expected_wall_seconds"] = p.expected_wall.count();
      e["expected_finish"] = OptTime(p.expected_finish);
      e["expected_preemptions"] = p.expected_preemptions;
    }
    pools.push_back(std::move(e));
  }
  auto name_of = [&](const std::optional<model::PoolId>& id) -> json {
    if (!id) return nullptr;
    for (const auto& p : q.pools)
      if (p.pool_id == *id) return p.pool;
    return nullptr;
  };
  return {{"pools", pools},
          {"recommended_pool", name_of(q.recommended)},
          {"recommendation", q.recommendation},
          {"on_demand_pool", name_of(q.on_demand_pool)},
          {"on_demand_cost", q.on_demand_pool ? json(FormatDollars(q.on_demand_cost, true))
                                              : json(nullptr)},
          {"earliest_pool", name_of(q.earliest_pool)},
          {"earliest_finish", OptTime(q.earliest_finish)},
          {"deadline_feasible", q.deadline_feasible},
          {"refusal", !q.unplaceable.empty() ? json(q.unplaceable)
                      : q.refusal.empty()        ? json(nullptr)
                                                 : json(q.refusal)},
          {"learned", EncodeOutlooks(q.learned)}};
}

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
