// Routes for jobs, health and identity.
#include <spdlog/spdlog.h>

#include "api/json_limits.h"
#include "api/routes.h"
#include "common/crypto.h"
#include "common/money.h"

namespace frugal::api {

namespace {

StatusOr<model::JobId> ParseJobId(const std::string& text) { return ParseId(text, "id"); }

StatusOr<store::JobFilter> ParseFilter(const httplib::Request& req, const store::Principal& who) {
  RETURN_IF_ERROR(
      CheckQueryParams(req, {"state", "team", "user", "label", "limit", "cursor", "array"}));
  const Query query = ParseQuery(req);
  for (auto it = query.begin(); it != query.end(); it = query.upper_bound(it->first)) {
    if (query.count(it->first) > 1) {
      return InvalidArgument("query parameter '" + it->first + "' given more than once", it->first);
    }
  }
  auto has = [&](const char* k) { return query.count(k) > 0; };
  auto get = [&](const char* k) { return query.find(k)->second; };
  store::JobFilter f;
  f.visible_team = VisibleTeam(who);
  if (has("state")) {
    ASSIGN_OR_RETURN(f.state, model::ParseJobState(get("state")));
  }
  if (has("team")) {
    f.team = get("team");
    RETURN_IF_ERROR(ValidateName(*f.team, "team", false));
  }
  if (has("user")) {
    f.user = get("user");
    RETURN_IF_ERROR(ValidateName(*f.user, "user", true));
  }
  if (has("label")) {
    std::string l = get("label");
    auto eq = l.find('=');
    if (eq == std::string::npos || eq == 0 || l.size() > 320) {
      return InvalidArgument("label filter must be key=value", "label");
    }
    if (!IsStorableText(l)) {
      return InvalidArgument("label filter must be UTF-8 text without NUL characters", "label");
    }
    f.label = std::make_pair(l.substr(0, eq), l.substr(eq + 1));
  }
  if (has("limit")) {
    std::string v = get("limit");
    if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(v) < 1 || std::stoi(v) > 500) {
      return InvalidArgument("limit must be an integer between 1 and 500", "limit");
    }
    f.limit = std::stoi(v);
  }
  if (has("array")) {
    auto id = ParseId(get("array"), "array");
    if (!id.ok()) return InvalidArgument("array must be an array id", "array");
    f.array = *id;
  }
  if (has("cursor")) {
    auto id = ParseJobId(get("cursor"));
    if (!id.ok()) return InvalidArgument("cursor must be the next_cursor of a previous page", "cursor");
    f.before = *id;
  }
  return f;
}

// An item's error, named by its place in the batch: "jobs[3]: gpus must be ...".
Status AtItem(const Status& st, std::size_t i) {
  const std::string at = "jobs[" + std::to_string(i) + "]";
  return Status(st.code(), at + ": " + st.message(), st.field().empty() ? at : at + "." + st.field());
}

// The batch reply, {"count", "created", "expected_cost", "jobs": [{"created", "id", "state"}]},
// written as text: the same bytes as dumping the json object (keys in nlohmann's sorted
// order), without building 10,000 objects first (decision 0046).
std::string EncodeBatchReply(const std::vector<store::BatchItem>& items, int created,
                             Micros expected) {
  std::string out =
      "{\"count\":" + std::to_string(items.size()) + ",\"created\":" + std::to_string(created) +
      ",\"expected_cost\":" + json(FormatDollars(expected, true)).dump() + ",\"jobs\":[";
  out.reserve(out.size() + items.size() * 48 + 2);
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += ',';
    out += items[i].created ? "{\"created\":true,\"id\":" : "{\"created\":false,\"id\":";
    out += std::to_string(items[i].id);
    out += ",\"state\":\"";  // states are plain lower-case words: nothing to escape
    out += model::ToString(items[i].state);
    out += "\"}";
  }
  out += "]}";
  return out;
}

// POST /v1/jobs:batch (decision 0024): every spec is checked as POST /v1/jobs checks it,
// then all are stored in one transaction, or none is.
StatusOr<Reply> SubmitBatch(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  RETURN_IF_ERROR(CheckQueryParams(req, {}));
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(CheckFields(body, {"jobs"}));
  if (!body.contains("jobs") || !body["jobs"].is_array())
    return InvalidArgument("'jobs' must be an array of job specs, as POST /v1/jobs takes", "jobs");
  const json& specs = body["jobs"];
  if (specs.empty() || specs.size() > kMaxBatchJobs)
    return InvalidArgument("'jobs' must hold 1 to " + std::to_string(kMaxBatchJobs) +
                               " specs, got " + std::to_string(specs.size()) +
                               "; split a larger sweep into several batches",
                           "jobs");
  std::optional<std::string> key;
  if (req.has_header("Idempotency-Key")) {
    key = req.get_header_value("Idempotency-Key");
    // Each job stores KEY#INDEX, which must fit the 255 characters of a single submit's key.
    if (key->empty() || key->size() > 240 || !IsStorableText(*key))
      return InvalidArgument("Idempotency-Key of a batch must be 1 to 240 characters of UTF-8 text",
                             "Idempotency-Key");
  }
  std::vector<store::SubmitRequest> reqs(specs.size());
  ArrayDeps array_deps(ctx, who);  // after_arrays: one limit over the whole batch
  for (std::size_t i = 0; i < specs.size(); ++i) {
    auto& r = reqs[i];
    if (!specs[i].is_object())
      return AtItem(InvalidArgument(std::string("must be a JSON object, got ") + specs[i].type_name()), i);
    // Copied only to take after_arrays out: a copy of every spec cost more than decoding it.
    const json* item = &specs[i];
    json trimmed;
    json after_arrays = json::object();
    if (item->contains("after_arrays")) {
      trimmed = *item;
      after_arrays["after_arrays"] = trimmed["after_arrays"];
      trimmed.erase("after_arrays");
      item = &trimmed;
    }
    auto spec = DecodeJobSpec(*item);
    if (!spec.ok()) return AtItem(spec.status(), i);
    r.spec = *std::move(spec);
    if (Status st = array_deps.Take(after_arrays, r.spec); !st.ok()) return AtItem(st, i);
    if (key) {
      r.idempotency_key = *key + "#" + std::to_string(i);
      r.request_sha256 = Sha256Hex(specs[i].dump());
    }
  }
  constexpr std::size_t kNone = static_cast<std::size_t>(-1);
  std::size_t refused = kNone;
  auto batch = ctx.submit.SubmitBatch(who, std::move(reqs), &refused);
  if (!batch.ok()) {
    // An admission refusal names its item; the store's errors name theirs themselves.
    return refused == kNone ? batch.status() : AtItem(batch.status(), refused);
  }
  const auto& items = batch->items;
  int created = 0;
  for (const auto& item : items) created += item.created ? 1 : 0;
  Reply reply =
      Reply::Text("application/json", EncodeBatchReply(items, created, batch->expected_cost));
  reply.status = created > 0 ? 201 : 200;
  return reply;
}

}  // namespace

void RegisterJobRoutes(Router& s, Context& ctx) {
  s.Get("/healthz", Route(ctx, Access::kPublic, [](auto&, auto&) -> StatusOr<Reply> {
          return Reply{200, {{"status", "ok"}}};
        }));

  s.Get("/readyz", Route(ctx, Access::kPublic, [&ctx](auto&, auto&) -> StatusOr<Reply> {
          // Bounded: a hung database answers 503 within the check's wait, never hangs here.
          RETURN_IF_ERROR(ctx.ready != nullptr ? ctx.ready->Check() : ctx.store.Ping());
          return Reply{200, {{"status", "ready"}}};
        }));

  s.Get("/v1/whoami", Route(ctx, Access::kPublic, [&ctx](const httplib::Request& req, auto&)
                                                     -> StatusOr<Reply> {
          // Public route, own auth: workers may ask who they are too.
          const std::string h = req.get_header_value("Authorization");
          if (h.rfind("Bearer ", 0) != 0 || h.size() <= 7) {
            return Status(StatusCode::kUnauthenticated, "missing 'Authorization: Bearer <token>' header");
          }
          ASSIGN_OR_RETURN(auto who, ctx.store.Authenticate(Sha256Hex(h.substr(7))));
          return Reply{200, {{"team", who.team}, {"user", who.user}, {"role", store::ToString(who.role)}}};
        }));

  s.Post("/v1/jobs", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req, auto& who)
                                                    -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {"dry_run"}));
           bool dry_run = false;
           if (req.has_param("dry_run")) {
             const std::string v = req.get_param_value("dry_run");
             if (v != "true" && v != "false")
               return InvalidArgument("dry_run must be true or false", "dry_run");
             dry_run = v == "true";
           }
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           // Canonical form (keys sorted by nlohmann's object map), before after_arrays
           // is taken out: a retry is the same request only if that is the same too.
           const std::string canonical = body.dump();
           json after_arrays = json::object();
           if (body.contains("after_arrays")) {
             after_arrays["after_arrays"] = body["after_arrays"];
             body.erase("after_arrays");
           }
           store::SubmitRequest sr;
           ASSIGN_OR_RETURN(sr.spec, DecodeJobSpec(body));
           ArrayDeps array_deps(ctx, *who);
           RETURN_IF_ERROR(array_deps.Take(after_arrays, sr.spec));
           if (dry_run) {
             // The plan without the job: where it would go, what it would cost, by when.
             ASSIGN_OR_RETURN(auto dry, ctx.submit.DryRun(sr));
             model::Job job;
             job.spec = sr.spec;
             job.team = who->team;
             job.user = who->user;
             job.created_at = job.updated_at = dry.admitted_at;
             json j = EncodeJob(job);
             j.erase("id");
             return Reply{200, {{"dry_run", true}, {"job", j}, {"quote", EncodeQuote(dry.quote)}}};
           }
           if (req.has_header("Idempotency-Key")) {
             std::string key = req.get_header_value("Idempotency-Key");
             if (key.empty() || key.size() > 255 || !IsStorableText(key)) {
               return InvalidArgument("Idempotency-Key must be 1 to 255 characters of UTF-8 text",
                                      "Idempotency-Key");
             }
             sr.idempotency_key = key;
           }
           sr.request_sha256 = Sha256Hex(canonical);
           // A submit that joins a group waits for it holding no database connection:
           // its slot can serve the next request meanwhile (decision 0047).
           if (service::SubmitService::JoinsGroups(sr)) LeaveHeldLane();
           ASSIGN_OR_RETURN(auto submitted, ctx.submit.Submit(*who, std::move(sr)));
           const store::SubmitResult& result = submitted.result;
           json outlook = json::object();
           EncodeOutlook(submitted.quote, submitted.budget, outlook);
           json out = EncodeJob(result.job);
           for (auto& [key, value] : outlook.items()) out[key] = value;
           return Reply{result.created ? 201 : 200, out};
         }));

  s.Post("/v1/jobs:batch", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                              auto& who) -> StatusOr<Reply> {
           return SubmitBatch(ctx, req, *who);
         }));

  s.Get("/v1/jobs", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req, auto& who)
                                                   -> StatusOr<Reply> {
          ASSIGN_OR_RETURN(auto filter, ParseFilter(req, *who));
          ASSIGN_OR_RETURN(auto page, ctx.store.ListJobs(filter));
          std::vector<model::JobId> ids;
          for (const auto& j : page.jobs) ids.push_back(j.id);
          // Pool and cost per row in one query, not one timeline request per row.
          ASSIGN_OR_RETURN(auto summaries, ctx.store.JobSummaries(ids));
          json jobs = json::array();
          for (const auto& j : page.jobs) {
            auto it = summaries.find(j.id);
            jobs.push_back(EncodeJobListItem(j, it == summaries.end() ? nullptr : &it->second));
          }
          json body = {{"jobs", jobs},
                       {"next_cursor", page.next_cursor ? json(std::to_string(*page.next_cursor))
                                                        : json(nullptr)}};
          return Reply{200, body};
        }));

  s.Get(R"(/v1/jobs/([^/]+))", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                                  auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto id, ParseJobId(req.matches[1]));
          ASSIGN_OR_RETURN(auto detail, ctx.store.GetJob(id, VisibleTeam(*who)));
          json out = EncodeJobDetail(detail);
          ASSIGN_OR_RETURN(out["right_sizing"], JobRightSizing(ctx, detail));
          return Reply{200, out};
        }));

  s.Post(R"(/v1/jobs/([^/]+)/cancel)", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                                         auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(auto id, ParseJobId(req.matches[1]));
           if (!req.body.empty()) {
             ASSIGN_OR_RETURN(json body, ParseObject(req.body));
             if (!body.empty()) {
               return InvalidArgument("unknown field '" + body.begin().key().substr(0, 64) + "'",
                                      body.begin().key().substr(0, 64));
             }
           }
           ASSIGN_OR_RETURN(auto job, ctx.store.CancelJob(id, VisibleTeam(*who), who->user));
           // A running job is stopped by its worker: tell it now, not at its next beat.
           if (job.state == model::JobState::kRunning) ctx.engine.Wake();
           spdlog::info(R"("event":"job_cancel","job_id":{},"state":"{}")", job.id,
                        model::ToString(job.state));
           return Reply{200, EncodeJob(job)};
         }));
}

}  // namespace frugal::api
