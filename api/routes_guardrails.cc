// Guardrails (docs/decisions/0012-guardrails.md): admin settings, team idle policies and
// approvals (admin only), plus what the job and report routes use: the submit-time rules
// and right-sizing advice.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/money.h"
#include "scheduler/policy/guardrails/guardrails.h"

namespace frugal::api {

namespace {

json OptSeconds(const std::optional<Seconds>& s) { return s ? json(s->count()) : json(nullptr); }

json EncodeSettings(const model::GuardrailSettings& s) {
  json classes = json::object();
  for (const auto& [cls, rt] : s.runtimes) {
    classes[cls] = {{"default_max_runtime_seconds", OptSeconds(rt.default_max_runtime)},
                    {"max_max_runtime_seconds", OptSeconds(rt.max_max_runtime)},
                    {"min_run_time_seconds", OptSeconds(rt.min_run_time)}};
  }
  return {{"priority_classes", classes},
          {"approval", {{"premium_gpu_types", s.premium_gpu_types},
                        {"above_gpus", s.approval_above_gpus}}},
          {"idle", {{"threshold_percent", s.idle_threshold_percent},
                    {"window_seconds", s.idle_window.count()}}}};
}

// `field` of `obj` as seconds: null clears it, a missing field leaves `out` alone.
Status MergeSeconds(const json& obj, const char* field, const std::string& path,
                    std::optional<Seconds>& out, std::int64_t least = 1) {
  if (!obj.contains(field)) return Status::Ok();
  if (obj[field].is_null()) {
    out.reset();
    return Status::Ok();
  }
  if (!obj[field].is_number_integer() || obj[field].get<std::int64_t>() < least ||
      obj[field].get<std::int64_t>() > 366LL * 86400) {
    return InvalidArgument(path + "." + field + ": seconds between " + std::to_string(least) +
                               " and 31622400, or null",
                           path + "." + field);
  }
  out = Seconds(obj[field].get<std::int64_t>());
  return Status::Ok();
}

Status MergeClasses(const json& classes, model::GuardrailSettings& s) {
  if (!classes.is_object()) {
    return InvalidArgument("priority_classes: an object by class name, e.g. {\"normal\":"
                           "{\"default_max_runtime_seconds\":3600}}",
                           "priority_classes");
  }
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    const std::string path = "priority_classes." + it.key().substr(0, 32);
    RETURN_IF_ERROR(model::PriorityRank(it.key()).status());
    if (it.value().is_null()) {
      s.runtimes.erase(it.key());
      continue;
    }
    if (!it.value().is_object()) return InvalidArgument(path + ": must be an object or null", path);
    RETURN_IF_ERROR(
        CheckFields(it.value(), {"default_max_runtime_seconds", "max_max_runtime_seconds",
                                 "min_run_time_seconds"}));
    model::ClassRuntime rt = s.runtimes[it.key()];
    RETURN_IF_ERROR(MergeSeconds(it.value(), "default_max_runtime_seconds", path, rt.default_max_runtime));
    RETURN_IF_ERROR(MergeSeconds(it.value(), "max_max_runtime_seconds", path, rt.max_max_runtime));
    // 0: jobs of this class may be preempted by a higher class at once.
    RETURN_IF_ERROR(MergeSeconds(it.value(), "min_run_time_seconds", path, rt.min_run_time, 0));
    if (rt.default_max_runtime && rt.max_max_runtime && *rt.default_max_runtime > *rt.max_max_runtime) {
      return InvalidArgument(path + ": the default must not exceed the maximum", path);
    }
    s.runtimes[it.key()] = rt;
  }
  return Status::Ok();
}

}  // namespace

// A partial update: what the body names replaces the current value; the rest stays.
Status MergeSettings(const json& body, model::GuardrailSettings& s) {
  RETURN_IF_ERROR(CheckFields(body, {"priority_classes", "approval", "idle"}));
  if (body.contains("priority_classes")) RETURN_IF_ERROR(MergeClasses(body["priority_classes"], s));
  if (body.contains("approval")) {
    const json& a = body["approval"];
    if (!a.is_object()) return InvalidArgument("approval: must be an object", "approval");
    RETURN_IF_ERROR(CheckFields(a, {"premium_gpu_types", "above_gpus"}));
    if (a.contains("premium_gpu_types")) {
      const json& t = a["premium_gpu_types"];
      if (!t.is_array() || t.size() > 64) {
        return InvalidArgument("approval.premium_gpu_types: an array of GPU type names",
                               "approval.premium_gpu_types");
      }
      s.premium_gpu_types.clear();
      for (const auto& v : t) {
        if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64) {
          return InvalidArgument("approval.premium_gpu_types: names of 1 to 64 characters",
                                 "approval.premium_gpu_types");
        }
        RETURN_IF_ERROR(ValidateName(v.get<std::string>(), "approval.premium_gpu_types", true));
        s.premium_gpu_types.push_back(v.get<std::string>());
      }
    }
    if (a.contains("above_gpus")) {
      ASSIGN_OR_RETURN(auto n, RequiredInt(a, "above_gpus", 0, 100000));
      s.approval_above_gpus = static_cast<int>(n);
    }
  }
  if (body.contains("idle")) {
    const json& i = body["idle"];
    if (!i.is_object()) return InvalidArgument("idle: must be an object", "idle");
    RETURN_IF_ERROR(CheckFields(i, {"threshold_percent", "window_seconds"}));
    if (i.contains("threshold_percent")) {
      ASSIGN_OR_RETURN(auto p, RequiredInt(i, "threshold_percent", 1, 100));
      s.idle_threshold_percent = static_cast<int>(p);
    }
    if (i.contains("window_seconds")) {
      ASSIGN_OR_RETURN(auto w, RequiredInt(i, "window_seconds", 1, 7 * 86400));
      s.idle_window = Seconds(w);
    }
  }
  return Status::Ok();
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

StatusOr<json> JobRightSizing(Context& ctx, const store::JobDetail& d) {
  if (!model::IsTerminal(d.job.state)) return json(nullptr);
  model::JobUsage usage{d.job.id, d.job.spec.tolerance, {}};
  for (const auto& a : d.attempts) {
    if (!a.ended_at) continue;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(*a.ended_at - a.started_at).count();
    usage.runs.push_back({a.pool, a.gpus, ms, a.peak_gpu_mem_mb});
  }
  ASSIGN_OR_RETURN(auto pools, ctx.store.ListPools());
  auto advice = policy::AdviseRightSizing(usage, pools);
  return advice ? EncodeRightSizing(*advice) : json(nullptr);
}

void RegisterGuardrailRoutes(Router& s, Context& ctx) {
  s.Get("/v1/admin/guardrails", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                                                 auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto settings, ctx.store.GetGuardrails());
          return Reply{200, EncodeSettings(settings)};
        }));

  s.Post("/v1/admin/guardrails", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                                                  auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           ASSIGN_OR_RETURN(auto settings, ctx.store.GetGuardrails());
           RETURN_IF_ERROR(MergeSettings(body, settings));
           ASSIGN_OR_RETURN(auto saved, ctx.store.SetGuardrails(*who, settings));
           return Reply{200, EncodeSettings(saved)};
         }));

  s.Get(R"(/v1/admin/teams/([^/]+)/idle-policy)",
        Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          const std::string team = req.matches[1];
          ASSIGN_OR_RETURN(auto policy, ctx.store.GetTeamIdlePolicy(team));
          return Reply{200, {{"team", team}, {"idle_policy", model::ToString(policy)}}};
        }));

  s.Post(R"(/v1/admin/teams/([^/]+)/idle-policy)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           const std::string team = req.matches[1];
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           RETURN_IF_ERROR(CheckFields(body, {"idle_policy"}));
           ASSIGN_OR_RETURN(std::string text, RequiredString(body, "idle_policy"));
           ASSIGN_OR_RETURN(auto policy, model::ParseIdlePolicy(text));
           ASSIGN_OR_RETURN(auto saved, ctx.store.SetTeamIdlePolicy(*who, team, policy));
           return Reply{200, {{"team", team}, {"idle_policy", model::ToString(saved)}}};
         }));

  s.Post(R"(/v1/admin/jobs/([^/]+)/approve)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
           if (!req.body.empty()) {
             ASSIGN_OR_RETURN(json body, ParseObject(req.body));
             RETURN_IF_ERROR(CheckFields(body, {}));
           }
           ASSIGN_OR_RETURN(auto job, ctx.store.ApproveJob(*who, id));
           spdlog::info(R"("event":"job_approved","job_id":{},"by":"{}")", job.id, who->user);
           ctx.engine.Kick();
           return Reply{200, EncodeJob(job)};
         }));
}

}  // namespace frugal::api
