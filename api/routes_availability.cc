// Admin routes of spot pools' learned availability (issue 14, decision 0023): import an
// availability history in the shared traces' CSV format, and read the pool's model.
// Admin role only; the import is audited by the store with the caller as the actor.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/log.h"
#include "scheduler/model/availability_history.h"

namespace frugal::api {

namespace {

json OptTime(const std::optional<Timestamp>& t) {
  return t ? json(FormatRfc3339(*t)) : json(nullptr);
}

// Each bin's hazard: the chance a spell of that age ends in the next tick, from the fitted
// counts plus the prior (the prior alone before the first fit).
json EncodeBins(const store::PoolAvailability& a) {
  const auto m = a.model ? *a.model
                         : model::AvailabilityModel::Empty(model::kAvailabilityTickSeconds,
                                                           model::kAvailabilityBins);
  const auto next = m.Transitions(a.prior.prior_ticks, a.prior.up_end, a.prior.down_end);
  auto hazard = [&](int state) {
    const int other_side_age0 = m.IsUp(state) ? m.bins() : 0;
    for (const auto& n : next[state])
      if (n.state == other_side_age0) return n.p;
    return 0.0;
  };
  auto ticks = [&](int s) { return m.stay[s] + m.onward[s] + m.flip[s]; };
  json bins = json::array();
  for (int b = 0; b < m.bins(); ++b) {
    const int up = m.State(true, m.bin_start[b]), down = m.State(false, m.bin_start[b]);
    bins.push_back({{"bin", b},
                    {"from_seconds", m.bin_start[b] * m.tick_seconds},
                    {"up_hazard", hazard(up)},
                    {"down_hazard", hazard(down)},
                    {"up_ticks", ticks(up)},
                    {"down_ticks", ticks(down)}});
  }
  return bins;
}

json EncodeAvailability(const store::PoolAvailability& a) {
  return {{"pool", a.pool},
          {"tick_seconds", model::kAvailabilityTickSeconds},
          {"up", a.now.up},
          {"spell_seconds", a.now.spell_seconds},
          {"assumed", a.now.assumed},
          {"observed_ticks", a.observed_ticks},
          {"imported_ticks", a.imported_ticks},
          {"imported_source", a.imported_source.empty() ? json(nullptr) : json(a.imported_source)},
          {"imported_at", OptTime(a.imported_at)},
          {"fitted_at", OptTime(a.fitted_at)},
          {"refit_ms", a.fitted_at ? json(a.refit_ms) : json(nullptr)},
          {"bins", EncodeBins(a)}};
}

StatusOr<std::string> OptionalString(const json& body, const char* field) {
  if (!body.contains(field) || body[field].is_null()) return std::string();
  if (!body[field].is_string()) return InvalidArgument(std::string(field) + " must be a string", field);
  return body[field].get<std::string>();
}

}  // namespace

void RegisterAvailabilityRoutes(Router& s, Context& ctx) {
  s.Post(R"(/v1/admin/pools/([^/]+)/availability/history)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                           auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           const std::string pool = req.matches[1];
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           RETURN_IF_ERROR(CheckFields(body, {"csv", "zone", "column", "source"}));
           ASSIGN_OR_RETURN(std::string csv, RequiredString(body, "csv"));
           ASSIGN_OR_RETURN(std::string zone, OptionalString(body, "zone"));
           ASSIGN_OR_RETURN(std::string column, OptionalString(body, "column"));
           ASSIGN_OR_RETURN(std::string source, OptionalString(body, "source"));
           ASSIGN_OR_RETURN(auto series, model::ParseAvailabilityCsv(csv, zone, column));
           auto counts = model::AvailabilityModel::Empty(model::kAvailabilityTickSeconds,
                                                         model::kAvailabilityBins);
           model::AddSpells(model::SpellsFromSeries(series), counts);
           // What the evidence was, for the audit log and GET.
           std::string what = source.empty() ? "csv" : source;
           if (!zone.empty()) what += " zone " + zone;
           if (!column.empty()) what += " column " + column;
           what += ", " + std::to_string(series.t_s.size()) + " rows, step " +
                   std::to_string(static_cast<long long>(series.step_s + 0.5)) + " s";
           ASSIGN_OR_RETURN(auto saved, ctx.store.ImportAvailability(*who, pool, counts, what));
           spdlog::info(R"("event":"availability_imported","pool":"{}","by":"{}","ticks":{})",
                        JsonEscape(pool), JsonEscape(who->user), saved.imported_ticks);
           ctx.engine.Kick();  // the pool has a model now
           return Reply{200, EncodeAvailability(saved)};
         }));
  s.Get(R"(/v1/admin/pools/([^/]+)/availability)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto a, ctx.store.GetAvailability(req.matches[1]));
          return Reply{200, EncodeAvailability(a)};
        }));
}

}  // namespace frugal::api
