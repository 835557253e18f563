// Job arrays (decision 0026): POST /v1/arrays submits one spec as many tasks; GET shows the
// array by state with the sweep's cost; cancel ends every task. The tasks themselves are
// jobs, listed with GET /v1/jobs?array=ID.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/crypto.h"
#include "common/money.h"

namespace frugal::api {

namespace {

// A list of array ids (`after_arrays`), each a positive integer.
StatusOr<std::vector<std::int64_t>> ArrayIds(const json& body, const char* field) {
  std::vector<std::int64_t> out;
  if (!body.contains(field) || body[field].is_null()) return out;
  const json& v = body[field];
  if (!v.is_array() || v.size() > 100)
    return InvalidArgument(std::string(field) + " must be a list of at most 100 array ids", field);
  for (const auto& id : v) {
    if (!id.is_number_integer() || id.get<std::int64_t>() < 1)
      return InvalidArgument(std::string(field) + " must hold positive integer array ids", field);
    out.push_back(id.get<std::int64_t>());
  }
  return out;
}

StatusOr<Reply> SubmitArray(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  RETURN_IF_ERROR(CheckQueryParams(req, {}));
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  const std::string canonical = body.dump();  // before after_arrays is taken out
  RETURN_IF_ERROR(CheckFields(body, {"job", "first", "last", "step", "max_running",
                                     "after_arrays", "after_array_index"}));
  if (!body.contains("job") || !body["job"].is_object())
    return InvalidArgument("'job' must be the spec every task runs, as POST /v1/jobs takes", "job");
  store::ArrayRequest ar;
  ASSIGN_OR_RETURN(auto first, RequiredInt(body, "first", 0, 1000000));
  ASSIGN_OR_RETURN(auto last, RequiredInt(body, "last", 0, 1000000));
  ar.first = static_cast<int>(first);
  ar.last = static_cast<int>(last);
  if (ar.last < ar.first) return InvalidArgument("last must be at least first", "last");
  if (body.contains("step")) {
    ASSIGN_OR_RETURN(auto step, RequiredInt(body, "step", 1, 1000000));
    ar.step = static_cast<int>(step);
  }
  if (body.contains("max_running") && !body["max_running"].is_null()) {
    ASSIGN_OR_RETURN(auto m, RequiredInt(body, "max_running", 1, store::kMaxArrayTasks));
    ar.max_running = static_cast<int>(m);
  }
  if (body.contains("after_array_index") && !body["after_array_index"].is_null()) {
    ASSIGN_OR_RETURN(auto a, RequiredInt(body, "after_array_index", 1, INT64_MAX));
    ar.after_array_index = a;
  }
  const std::int64_t count = (ar.last - ar.first) / ar.step + 1;
  if (count > store::kMaxArrayTasks)
    return InvalidArgument("an array has at most " + std::to_string(store::kMaxArrayTasks) +
                               " tasks; first..last by step gives " + std::to_string(count),
                           "last");
  auto spec = DecodeJobSpec(body["job"]);
  if (!spec.ok())
    return Status(spec.status().code(), "job: " + spec.status().message(),
                  spec.status().field().empty() ? "job" : "job." + spec.status().field());
  ar.task.spec = *std::move(spec);
  ArrayDeps deps(ctx, who);
  RETURN_IF_ERROR(deps.Take(body, ar.task.spec, count));
  if (req.has_header("Idempotency-Key")) {
    const std::string key = req.get_header_value("Idempotency-Key");
    if (key.empty() || key.size() > 255 || !IsStorableText(key))
      return InvalidArgument("Idempotency-Key must be 1 to 255 characters of UTF-8 text",
                             "Idempotency-Key");
    ar.task.idempotency_key = key;
  }
  ar.task.request_sha256 = Sha256Hex(canonical);
  ASSIGN_OR_RETURN(auto submitted, ctx.submit.SubmitArray(who, std::move(ar)));
  const store::ArrayResult& result = submitted.result;
  const policy::Quote& quote = submitted.quote;
  json out = EncodeArray(result.array);
  if (const auto* p = quote.RecommendedPool()) {
    out["expected_pool"] = p->pool;
    out["expected_cost"] = FormatDollars(p->expected_cost * result.array.task_count, true);
  }
  return Reply{result.created ? 201 : 200, out};
}

}  // namespace

Status ArrayDeps::Take(json& body, model::JobSpec& spec, std::int64_t copies) {
  ASSIGN_OR_RETURN(auto arrays, ArrayIds(body, "after_arrays"));
  body.erase("after_arrays");
  std::sort(arrays.begin(), arrays.end());
  arrays.erase(std::unique(arrays.begin(), arrays.end()), arrays.end());
  for (auto id : arrays) {
    auto it = tasks_.find(id);
    if (it == tasks_.end()) {
      auto tasks = ctx_.store.ArrayTasks({id}, VisibleTeam(who_));
      if (!tasks.ok()) return FailedPrecondition(tasks.status().message(), "after_arrays");
      it = tasks_.emplace(id, *std::move(tasks)).first;
    }
    stored_ += static_cast<std::int64_t>(it->second.size()) * copies;
    if (stored_ > kMaxIds)
      return InvalidArgument("after_arrays: this request would store over " +
                                 std::to_string(kMaxIds) +
                                 " dependencies (every task of every array, for every job); wait "
                                 "with after_array_index, or through one job that waits for the "
                                 "arrays",
                             "after_arrays");
    for (auto task : it->second) {
      if (std::find(spec.after_any.begin(), spec.after_any.end(), task) != spec.after_any.end())
        return InvalidArgument("after_arrays: job " + std::to_string(task) + " of array " +
                                   std::to_string(id) + " is also in after_any",
                               "after_arrays");
      if (std::find(spec.after.begin(), spec.after.end(), task) == spec.after.end())
        spec.after.push_back(task);
    }
  }
  return Status::Ok();
}

void RegisterArrayRoutes(Router& s, Context& ctx) {
  s.Post("/v1/arrays", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                         auto& who) -> StatusOr<Reply> {
           return SubmitArray(ctx, req, *who);
         }));
  s.Get(R"(/v1/arrays/([^/]+))", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                                   auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
          ASSIGN_OR_RETURN(auto a, ctx.store.GetArray(id, VisibleTeam(*who)));
          return Reply{200, EncodeArray(a)};
        }));
  s.Post(R"(/v1/arrays/([^/]+)/cancel)",
         Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req, auto& who)
                                        -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
           ASSIGN_OR_RETURN(int n, ctx.store.CancelArray(id, VisibleTeam(*who), who->user));
           if (n > 0) {
             ctx.engine.Kick();  // their places go to other jobs
             ctx.engine.Wake();  // and running tasks' workers stop them now
           }
           ASSIGN_OR_RETURN(auto a, ctx.store.GetArray(id, VisibleTeam(*who)));
           json out = EncodeArray(a);
           out["cancelled"] = n;
           return Reply{200, out};
         }));
}

}  // namespace frugal::api
