#include "api/codec_costs.h"

#include "api/codec_admin.h"

namespace frugal::api {

namespace {

// A time to the second as RFC 3339 (quotes are estimates), or null.
json OptTimeSeconds(const std::optional<Timestamp>& t) {
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
      e["expected_finish"] = OptTimeSeconds(p.expected_finish);
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
          {"earliest_finish", OptTimeSeconds(q.earliest_finish)},
          {"deadline_feasible", q.deadline_feasible},
          {"refusal", !q.unplaceable.empty() ? json(q.unplaceable)
                      : q.refusal.empty()        ? json(nullptr)
                                                 : json(q.refusal)},
          {"learned", EncodeOutlooks(q.learned)}};
}

void EncodeOutlook(const policy::Quote& quote, const std::optional<store::BudgetStatus>& budget,
                   json& out) {
  if (const auto* p = quote.RecommendedPool()) {
    out["expected_cost"] = Money(p->expected_cost);
    out["expected_pool"] = p->pool;
    // Reserved capacity is already paid for: it charges no budget.
    out["expected_budget_charge"] =
        Money(p->kind == model::CapacityKind::kReserved ? 0 : p->expected_cost);
  }
  if (budget) {
    out["budget"] = {{"period", model::ToString(budget->spec.period)},
                     {"limit", Money(budget->spec.limit)},
                     {"used", Money(budget->used())},
                     {"left", Money(budget->left())},
                     {"hard", budget->spec.hard}};
  }
}

json EncodeBudgetAlert(const store::BudgetAlert& a) {
  return {{"id", a.id},
          {"threshold_pct", a.threshold_pct},
          {"limit", Money(a.limit)},
          {"used", Money(a.used)},
          {"fired_at", FormatRfc3339(a.fired_at)},
          {"period_start", FormatRfc3339(a.period_start)},
          {"delivery_state", a.delivery_state},
          {"delivery_attempts", a.delivery_attempts},
          {"last_error", a.last_error.empty() ? json(nullptr) : json(a.last_error)}};
}

json EncodeBudgetStatus(const store::BudgetStatus& st, bool admin) {
  json out = EncodeBudgetSpec(st.team, st.spec, admin);
  out["period_start"] = FormatRfc3339(st.period_start);
  out["period_end"] = FormatRfc3339(st.period_end);
  out["spent"] = Money(st.spent);
  out["committed"] = Money(st.committed);
  out["used"] = Money(st.used());
  out["left"] = Money(st.left());
  json alerts = json::array();
  for (const auto& a : st.alerts) alerts.push_back(EncodeBudgetAlert(a));
  out["alerts"] = alerts;
  return out;
}

json EncodeCostRow(const store::CostRow& r) {
  json row = {{"key", r.key},
              {"spend", FormatDollars(r.spend, true)},
              {"spend_micros", r.spend},
              {"useful", FormatDollars(r.spend - r.wasted, true)},
              {"wasted", FormatDollars(r.wasted, true)},
              {"wasted_micros", r.wasted},
              {"gpu_hours", r.gpu_hours},
              {"jobs", r.jobs},
              {"succeeded_jobs", r.succeeded_jobs},
              {"on_demand_equivalent", FormatDollars(r.on_demand_equivalent, true)},
              {"spot_savings", FormatDollars(r.spot_savings, true)}};
  row["cost_per_successful_job"] =
      r.succeeded_jobs > 0 ? json(FormatDollars(r.spend / r.succeeded_jobs, true)) : json(nullptr);
  return row;
}

json EncodeSeriesRows(const store::CostReport& rep) {
  json rows = json::array();
  for (const auto& r : rep.rows) {
    rows.push_back({{"key", r.key}, {"spend_micros", r.spend}, {"wasted_micros", r.wasted}});
  }
  return rows;
}

json EncodeInterruption(const store::Interruption& x) {
  return {{"job", x.job},
          {"job_name", x.job_name},
          {"team", x.team},
          {"attempt", x.attempt},
          {"pool", x.pool},
          {"node", x.node},
          {"reason", x.reason},
          {"cause", x.cause},
          {"ended_at", FormatRfc3339(x.ended_at)},
          {"lost", Money(x.lost)},
          {"lost_micros", x.lost},
          {"next_attempt", x.next_attempt ? json(*x.next_attempt) : json(nullptr)},
          {"next_pool", x.next_attempt ? json(x.next_pool) : json(nullptr)},
          {"next_started_at", OptTime(x.next_started_at)}};
}

json EncodeRightSizing(const policy::RightSizing& r) {
  return {{"pool", r.pool},
          {"gpu_type", r.gpu_type},
          {"gpu_mem_gb", r.gpu_mem_gb},
          {"peak_gpu_mem_mb", r.peak_gpu_mem_mb},
          {"actual", FormatDollars(r.actual, true)},
          {"actual_micros", r.actual},
          {"alternative", FormatDollars(r.alternative, true)},
          {"alternative_micros", r.alternative},
          {"saving", FormatDollars(r.saving, true)},
          {"saving_micros", r.saving},
          {"message", r.message}};
}

}  // namespace frugal::api
