#include "api/server.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "api/http_server.h"
#include "api/json_limits.h"
#include "api/routes.h"
#include "common/crypto.h"
#include "common/log.h"
#include "common/metrics.h"

namespace frugal::api {

int HttpStatus(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kConflict: return 409;
    case StatusCode::kPayloadTooLarge: return 413;
    case StatusCode::kFailedPrecondition: return 422;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

namespace {

// How long a request may wait for a free handler in its lane before 503.
constexpr std::chrono::milliseconds kLaneWait{10000};
// How long /readyz waits for the database to answer a ping.
constexpr std::chrono::milliseconds kReadyWait{2000};

// Messages may quote client input cut at a byte limit; never let a broken UTF-8 sequence
// turn a 4xx into a 500.
std::string Dump(const json& body) {
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void WriteError(httplib::Response& res, const Status& st) {
  res.status = HttpStatus(st.code());
  if (st.code() == StatusCode::kUnavailable) res.set_header("Retry-After", "1");
  if (st.code() == StatusCode::kUnauthenticated) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(Dump(EncodeError(st)), "application/json");
}

StatusOr<store::Principal> Authenticate(Context& ctx, const httplib::Request& req) {
  const std::string header = req.get_header_value("Authorization");
  if (header.empty()) {
    return Status(StatusCode::kUnauthenticated,
                  "missing 'Authorization: Bearer <token>' header");
  }
  const std::string prefix = "Bearer ";
  if (header.size() <= prefix.size() || header.compare(0, prefix.size(), prefix) != 0) {
    return Status(StatusCode::kUnauthenticated,
                  "Authorization header must be 'Bearer <token>'");
  }
  // Only the hash leaves this function: the token is never stored or logged.
  return ctx.store.Authenticate(Sha256Hex(header.substr(prefix.size())));
}

Status CheckAccess(Access access, const store::Principal& who) {
  using store::Role;
  switch (access) {
    case Access::kPublic: return Status::Ok();
    case Access::kUsers:
      if (who.role == Role::kWorker) {
        return Status(StatusCode::kPermissionDenied, "worker tokens may only register nodes");
      }
      if (who.role == Role::kNode) {
        return Status(StatusCode::kPermissionDenied, "node credentials may only call worker endpoints");
      }
      if (who.role == Role::kMetrics) {
        return Status(StatusCode::kPermissionDenied, "metrics tokens may only read /metrics");
      }
      return Status::Ok();
    case Access::kAdmin:
      if (who.role != Role::kAdmin) {
        return Status(StatusCode::kPermissionDenied, "this endpoint needs an admin token");
      }
      return Status::Ok();
    case Access::kJoin:
      if (who.role != Role::kWorker && who.role != Role::kAdmin && who.role != Role::kNode) {
        return Status(StatusCode::kPermissionDenied, "registering a node needs a worker (join) token");
      }
      return Status::Ok();
    case Access::kNode:
      if (who.role != Role::kNode) {
        return Status(StatusCode::kPermissionDenied,
                      "this endpoint needs the node credential that registration returned");
      }
      return Status::Ok();
    case Access::kMetrics:
      if (who.role != Role::kMetrics && who.role != Role::kAdmin) {
        return Status(StatusCode::kPermissionDenied, "this endpoint needs a metrics or admin token");
      }
      return Status::Ok();
  }
  return Internal("unknown access level");
}

// A request httplib refused before any route ran. httplib itself parses the two form
// encodings (curl -d sends application/x-www-form-urlencoded by default): it refuses such
// a body over CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH with 413, and multipart
// without a boundary with 400. Name the real cause, not the JSON size limit or
// Content-Length.
Status TransportError(const httplib::Request& req, int status) {
  const std::string type = req.get_header_value("Content-Type");
  const std::string use_json = "; send the JSON body with 'Content-Type: application/json'";
  if (status == 404) return NotFound("no route " + req.method + " " + req.path.substr(0, 256));
  if (status == 413 && type.rfind("application/x-www-form-urlencoded", 0) == 0 &&
      req.body.size() <= kMaxBodyBytes) {
    return Status(StatusCode::kPayloadTooLarge,
                  "a body sent as application/x-www-form-urlencoded is limited to " +
                      std::to_string(CPPHTTPLIB_FORM_URL_ENCODED_PAYLOAD_MAX_LENGTH) +
                      " bytes" + use_json + " (limit " + std::to_string(kMaxBodyBytes) + ")");
  }
  if (status == 413) {
    return Status(StatusCode::kPayloadTooLarge, "request body exceeds the limit of " +
                                                    std::to_string(MaxBodyBytes(req.path)) +
                                                    " bytes");
  }
  if (type.rfind("multipart/form-data", 0) == 0) {
    return InvalidArgument("multipart/form-data bodies are not accepted" + use_json);
  }
  return InvalidArgument("malformed HTTP request (HTTP " + std::to_string(status) +
                         "): check the request line, the headers and that the body is as long "
                         "as Content-Length says");
}

}  // namespace

httplib::Server::Handler Route(Context& ctx, Access access, RouteFn fn) {
  return [&ctx, access, fn = std::move(fn)](const httplib::Request& req, httplib::Response& res) {
    try {
      std::optional<store::Principal> who;
      if (access != Access::kPublic) {
        auto p = Authenticate(ctx, req);
        if (!p.ok()) {
          metrics::CountDatabaseError(p.status(), "api");
          return WriteError(res, p.status());
        }
        if (Status st = CheckAccess(access, *p); !st.ok()) return WriteError(res, st);
        who = std::move(p).value();
      }
      if (!req.body.empty()) {
        if (Status st = CheckJsonLimits(req.body, MaxBodyBytes(req.path)); !st.ok())
          return WriteError(res, st);
      }
      auto reply = fn(req, who);
      if (!reply.ok()) {
        metrics::CountDatabaseError(reply.status(), "api");
        return WriteError(res, reply.status());
      }
      res.status = reply->status;
      if (!reply->content_type.empty()) {
        res.set_content(reply->text, reply->content_type.c_str());
      } else {
        res.set_content(Dump(reply->body), "application/json");
      }
    } catch (const std::exception& e) {
      spdlog::error(R"("event":"handler_exception","path":"{}","error":"{}")",
                    JsonEscape(req.path), JsonEscape(e.what()));
      WriteError(res, Internal("internal error; the request was not applied"));
    }
  };
}

std::string PathTemplate(const std::string& pattern) {
  static const std::string kGroup = "([^/]+)";
  std::string out = pattern;
  for (auto pos = out.find(kGroup); pos != std::string::npos; pos = out.find(kGroup, pos)) {
    const bool team = pos >= 7 && out.compare(pos - 7, 7, "/teams/") == 0;
    const bool web = pos >= 5 && out.compare(pos - 5, 5, "/web/") == 0;
    const bool node = pos >= 7 && out.compare(pos - 7, 7, "/nodes/") == 0;
    const bool pool = pos >= 7 && out.compare(pos - 7, 7, "/pools/") == 0;
    const std::string name = team ? "{team}"
                             : web ? "{file}"
                             : node ? "{node}"
                             : pool ? "{pool}"
                                    : "{id}";
    out.replace(pos, kGroup.size(), name);
    pos += name.size();
  }
  return out;
}

Router& Router::Get(const std::string& pattern, httplib::Server::Handler handler) {
  return Add("GET", pattern, std::move(handler));
}

Router& Router::Post(const std::string& pattern, httplib::Server::Handler handler) {
  return Add("POST", pattern, std::move(handler));
}

Router& Router::Add(const std::string& method, const std::string& pattern,
                    httplib::Server::Handler handler) {
  RouteInfo info{method, pattern, PathTemplate(pattern)};
  // The pattern, not the raw path, is the label: one series per route, not per job id.
  metrics::Family& latency = metrics::Default().Histogram(
      "frugal_http_request_duration_seconds",
      "Time to answer an API request, by method, route pattern and HTTP status.",
      {"method", "route", "status"}, metrics::LatencyBuckets());
  Lane* lane = lanes_.For(pattern);
  auto timed = [&latency, lane, method, path = info.path, handler = std::move(handler)](
                   const httplib::Request& req, httplib::Response& res) {
    metrics::Stopwatch watch;
    // The wait for a lane is part of the latency the client sees.
    Status admitted = lane != nullptr ? lane->Enter(kLaneWait) : Status::Ok();
    if (admitted.ok()) {
      HoldLane(lane);
      handler(req, res);
      LeaveHeldLane();  // unless the handler left it already
    } else {
      WriteError(res, admitted);
    }
    latency.Observe({method, path, std::to_string(res.status)}, watch.Seconds());
  };
  if (method == "GET") {
    server_.Get(pattern, std::move(timed));
  } else {
    server_.Post(pattern, std::move(timed));
  }
  routes_.push_back(std::move(info));
  return *this;
}

Query ParseQuery(const httplib::Request& req) {
  Query out;
  auto q = req.target.find('?');
  if (q == std::string::npos) return out;
  const std::string text = req.target.substr(q + 1);
  size_t start = 0;
  while (start <= text.size()) {
    size_t amp = text.find('&', start);
    if (amp == std::string::npos) amp = text.size();
    std::string part = text.substr(start, amp - start);
    if (!part.empty()) {
      // Split at the first '=' only: "label=exp=a" is the label filter "exp=a".
      size_t eq = part.find('=');
      std::string key = part.substr(0, eq);
      std::string value = eq == std::string::npos ? "" : part.substr(eq + 1);
      out.emplace(httplib::detail::decode_url(key, true), httplib::detail::decode_url(value, true));
    }
    start = amp + 1;
  }
  return out;
}

Status CheckQueryParams(const httplib::Request& req, std::initializer_list<const char*> allowed) {
  for (const auto& [key, value] : ParseQuery(req)) {
    bool ok = false;
    for (const char* a : allowed) ok = ok || key == a;
    if (!ok) {
      std::string names;
      for (const char* a : allowed) names += (names.empty() ? "" : ", ") + std::string(a);
      return InvalidArgument("unknown query parameter '" + key.substr(0, 64) + "'" +
                                 (names.empty() ? "" : " (allowed: " + names + ")"),
                             key.substr(0, 64));
    }
  }
  return Status::Ok();
}

StatusOr<std::int64_t> ParseId(const std::string& text, const char* field) {
  if (text.empty() || text.size() > 18 ||
      text.find_first_not_of("0123456789") != std::string::npos || text[0] == '0') {
    return InvalidArgument(std::string(field) + " must be a positive integer, got '" +
                               text.substr(0, 32) + "'",
                           field);
  }
  return std::stoll(text);
}

std::optional<model::TeamId> VisibleTeam(const store::Principal& who) {
  if (who.role == store::Role::kAdmin) return std::nullopt;
  return who.team_id;
}

struct ApiServer::Impl {
  Impl(store::JobStore& store, store::WorkerStore& workers, store::CostStore& costs,
       engine::Engine& engine, const service::Advisor& advisor, ApiOptions options)
      : ready([&store] { return store.Ping(); }, kReadyWait),
        // Users: two connections fewer than the pool, and one more for the leader of the
        // grouped submits, who runs outside the lane (decision 0047).
        // Waits hold a connection each, so as many may wait as the edge serves.
        lanes(std::max(1, options.db_pool_size - 3), std::max(2, options.db_pool_size),
              options.max_connections),
        submit(store, advisor, [&engine] { engine.KickForNewWork(); }),
        ctx{store, workers, costs, engine, advisor, submit, options, &ready},
        server(Edge(options)) {}
  static EdgeLimits Edge(const ApiOptions& options) {
    EdgeLimits limits;
    limits.max_connections = options.max_connections;
    limits.max_per_client = std::min(limits.max_per_client, options.max_connections);
    return limits;
  }
  ReadyCheck ready;
  HandlerLanes lanes;
  service::SubmitService submit;
  Context ctx;
  HttpServer server;
  Router router{server, lanes};
};

ApiServer::ApiServer(store::JobStore& store, store::WorkerStore& workers, store::CostStore& costs,
                     engine::Engine& engine, const service::Advisor& advisor, ApiOptions options)
    : impl_(std::make_unique<Impl>(store, workers, costs, engine, advisor, options)) {
  auto& s = impl_->server;
  // httplib answers 413 itself above this, before reading the body. Read and write
  // deadlines are HttpServer's (EdgeLimits). Only the batch route may send more than
  // kMaxBodyBytes: any other request that announces more is refused before its body is
  // read, and chunked bodies are refused (HttpServer::set_body_limit).
  s.set_payload_max_length(kMaxBatchBodyBytes);
  s.set_body_limit(MaxBodyBytes);
  s.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req,
                                                             httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    res.set_content(Dump(EncodeError(TransportError(req, res.status))), "application/json");
    return httplib::Server::HandlerResponse::Handled;
  }));
  s.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    WriteError(res, Internal("internal error; the request was not applied"));
  });
  s.set_logger([](const httplib::Request& req, const httplib::Response& res) {
    // Debug level: quiet by default under load. Never the Authorization header.
    spdlog::debug(R"("event":"http_request","method":"{}","path":"{}","status":{})",
                  req.method, JsonEscape(req.path.substr(0, 256)), res.status);
  });
  // Known label values start at 0, so a rate over them is defined before the first error.
  for (const char* source : {"api", "metrics", "engine"}) metrics::DatabaseErrors().Inc({source}, 0);
  Router& r = impl_->router;
  RegisterJobRoutes(r, impl_->ctx);
  RegisterArrayRoutes(r, impl_->ctx);
  RegisterAdminRoutes(r, impl_->ctx);
  RegisterWorkerRoutes(r, impl_->ctx);
  RegisterPlacementRoutes(r, impl_->ctx);
  RegisterReportRoutes(r, impl_->ctx);
  RegisterBudgetRoutes(r, impl_->ctx);
  RegisterGuardrailRoutes(r, impl_->ctx);
  RegisterMetricsRoutes(r, impl_->ctx);
  RegisterDashboardRoutes(r, impl_->ctx);
  RegisterWebRoutes(r, impl_->ctx);
}

std::vector<RouteInfo> ApiServer::Routes() const { return impl_->router.routes(); }

ApiServer::~ApiServer() = default;

StatusOr<int> ApiServer::Bind(const std::string& host, int port) {
  return impl_->server.Bind(host, port);
}

void ApiServer::Run() { impl_->server.listen_after_bind(); }
void ApiServer::Stop() { impl_->server.stop(); }

}  // namespace frugal::api
