// Internal to api/: what the route files share. Includes httplib; keep it out of headers
// other modules include.
#pragma once

#include <httplib.h>

#include <functional>
#include <optional>
#include <vector>

#include "api/codec_admin.h"
#include "api/codec_costs.h"
#include "api/codec_jobs.h"
#include "api/handler_lanes.h"
#include "api/ready_check.h"
#include "api/server.h"
#include "common/clock.h"
#include "scheduler/engine/engine.h"
#include "scheduler/policy/guardrails/guardrails.h"
#include "scheduler/service/submit_service.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/worker_store.h"

namespace frugal::api {

struct Context {
  store::JobStore& store;
  store::WorkerStore& workers;
  store::CostStore& costs;
  engine::Engine& engine;
  const service::Advisor& advisor;
  const service::SubmitService& submit;  // submit admission (decision 0043)
  ApiOptions options;
  ReadyCheck* ready = nullptr;  // /readyz's bounded database check; owned by the server
};

struct Reply {
  Reply() = default;
  Reply(int s, json b) : status(s), body(std::move(b)) {}
  // A reply that is not JSON (the metrics text, the OpenAPI document), sent as is.
  static Reply Text(std::string type, std::string content) {
    Reply r;
    r.content_type = std::move(type);
    r.text = std::move(content);
    return r;
  }

  int status = 200;
  json body;
  std::string content_type;  // set: `text` is the body and `body` is ignored
  std::string text;
};

// Who may call a route.
enum class Access {
  kPublic,
  kUsers /* admin + researcher */,
  kAdmin,
  kJoin /* a join token (worker), an admin, or a node re-registering with its credential */,
  kNode /* a node credential only (decision 0019) */,
  kMetrics /* metrics + admin */
};

// Registers routes on the httplib server and remembers each (method, pattern), so that the
// server can list its routes (the OpenAPI coverage test) and label request latency by
// route pattern rather than by raw path. Each handler first takes a slot in its route's
// lane (HandlerLanes::For). Not thread-safe: used only while the server is being built;
// the handlers it installs are.
class Router {
 public:
  Router(httplib::Server& server, HandlerLanes& lanes) : server_(server), lanes_(lanes) {}
  Router& Get(const std::string& pattern, httplib::Server::Handler handler);
  Router& Post(const std::string& pattern, httplib::Server::Handler handler);
  const std::vector<RouteInfo>& routes() const { return routes_; }

 private:
  Router& Add(const std::string& method, const std::string& pattern,
              httplib::Server::Handler handler);

  httplib::Server& server_;
  HandlerLanes& lanes_;
  std::vector<RouteInfo> routes_;
};

using RouteFn = std::function<StatusOr<Reply>(const httplib::Request&,
                                              const std::optional<store::Principal>&)>;

// Wraps a route: authenticates, checks the role, runs `fn`, maps Status to HTTP and
// turns any exception into a 500 JSON error (a handler must never take the process down).
httplib::Server::Handler Route(Context& ctx, Access access, RouteFn fn);

// The query string's parameters, decoded. httplib's req.params also holds form fields of
// an urlencoded body (curl -d), so routes read their query through this instead.
using Query = std::multimap<std::string, std::string>;
Query ParseQuery(const httplib::Request& req);

// Rejects query parameters not in `allowed`, naming the first unknown one.
Status CheckQueryParams(const httplib::Request& req, std::initializer_list<const char*> allowed);

// The HTTP status a Status code is answered with.
int HttpStatus(StatusCode code);

// Team filter for the caller: researchers see only their own team.
std::optional<model::TeamId> VisibleTeam(const store::Principal& who);

void RegisterJobRoutes(Router& server, Context& ctx);
// routes_arrays.cc: job arrays (POST /v1/arrays, GET and cancel /v1/arrays/{id}).
void RegisterArrayRoutes(Router& server, Context& ctx);
// `after_arrays` over one request (a submit, a batch or an array): each array's tasks read
// once, and at most kMaxIds job ids stored for the whole request (decision 0026).
class ArrayDeps {
 public:
  static constexpr std::int64_t kMaxIds = 100000;
  ArrayDeps(Context& ctx, const store::Principal& who) : ctx_(ctx), who_(who) {}
  // Takes `after_arrays` out of `body` and adds every task of those arrays to spec.after,
  // counted `copies` times against the limit (an array's tasks each store them).
  // FailedPrecondition naming an array the caller cannot see; InvalidArgument past the
  // limit, or for a task that is also in after_any.
  Status Take(json& body, model::JobSpec& spec, std::int64_t copies = 1);

 private:
  Context& ctx_;
  const store::Principal& who_;
  std::map<std::int64_t, std::vector<model::JobId>> tasks_;
  std::int64_t stored_ = 0;
};
void RegisterAdminRoutes(Router& server, Context& ctx);
// routes_audit.cc (called by RegisterAdminRoutes): tokens list/revoke, audit, apply.
void RegisterAdminAuditRoutes(Router& server, Context& ctx);
// routes_nodes.cc (called by RegisterAdminRoutes): node list, drain, undrain, remove.
void RegisterNodeRoutes(Router& server, Context& ctx);
// routes_availability.cc (called by RegisterAdminRoutes): a spot pool's availability
// history import and its learned model (decision 0023).
void RegisterAvailabilityRoutes(Router& server, Context& ctx);
void RegisterWorkerRoutes(Router& server, Context& ctx);
void RegisterPlacementRoutes(Router& server, Context& ctx);
void RegisterReportRoutes(Router& server, Context& ctx);
void RegisterBudgetRoutes(Router& server, Context& ctx);  // routes_budgets.cc
// routes_metrics.cc: GET /metrics (Prometheus text) and GET /openapi.yaml.
void RegisterMetricsRoutes(Router& server, Context& ctx);
// routes_dashboard.cc: the JSON views the dashboard needs (overview, job timeline, cost
// over time); routes_web.cc: the dashboard's static files at / and /web/{file}.
void RegisterDashboardRoutes(Router& server, Context& ctx);
void RegisterWebRoutes(Router& server, Context& ctx);

// routes_guardrails.cc: admin guardrail routes, and a finished job's right-sizing advice
// (null when none). The submit-time rules are service::SubmitService's.
void RegisterGuardrailRoutes(Router& server, Context& ctx);
StatusOr<json> JobRightSizing(Context& ctx, const store::JobDetail& detail);

// A positive integer path segment (job or attempt id).
StatusOr<std::int64_t> ParseId(const std::string& text, const char* field);

}  // namespace frugal::api
