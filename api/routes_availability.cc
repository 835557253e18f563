// Admin routes of spot pools' learned availability (issue 14, decision 0023): import an
// availability history in the shared traces' CSV format, and read the pool's model.
// Admin role only; the import is audited by the store with the caller as the actor.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/log.h"
#include "scheduler/model/availability_history.h"

namespace frugal::api {

namespace {

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
