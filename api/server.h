// The REST API v1 server (JSON over HTTP). Routes are in routes_*.cc; this owns the
// listener, authentication, error mapping and limits. httplib stays out of this header.
//
// Threading: each connection has its own thread (api/http_server.h, decision 0018);
// handlers run there, admitted by lane (users, workers; /healthz none), and call the store
// (thread-safe) and the engine facade (Kick only).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "scheduler/service/advisor.h"
#include "scheduler/engine/engine.h"
#include "scheduler/store/cost_store.h"
#include "scheduler/store/instance_store.h"
#include "scheduler/store/job_store.h"
#include "scheduler/store/worker_store.h"

namespace frugal::api {

// One registered route: its method, its httplib pattern (a regular expression) and the
// same as an OpenAPI path template, each capture group named ("/v1/jobs/{id}").
struct RouteInfo {
  std::string method;
  std::string pattern;
  std::string path;
};

// The OpenAPI path template of an httplib pattern: each "([^/]+)" becomes "{team}" after
// a "teams" segment and "{id}" elsewhere.
std::string PathTemplate(const std::string& pattern);

// docs/openapi.yaml, embedded at build time (cmake/embed_text.cmake).
const std::string& OpenApiYaml();

struct ApiOptions {
  Seconds lease_ttl{15};          // a worker's lease, extended by each heartbeat
  Seconds heartbeat_interval{2};  // what registration tells workers
  std::int64_t log_cap_bytes = 1 << 20;  // output kept per attempt
  // The database pool's size: user handlers run at most db_pool_size - 3 at once (plus the leader
  // of the grouped submits, decision 0047), so the worker protocol and the engine always find a
  // connection.
  int db_pool_size = 8;
  // Open connections the edge serves at once (EdgeLimits::max_connections).
  int max_connections = 512;
  // The exec provider's instances (issue 18): GET /v1/admin/instances and the
  // frugal_instances families of /metrics. Null: neither shows any.
  store::InstanceStore* instances = nullptr;
};

class ApiServer {
 public:
  ApiServer(store::JobStore& store, store::WorkerStore& workers, store::CostStore& costs,
            engine::Engine& engine, const service::Advisor& advisor, ApiOptions options);
  ~ApiServer();

  // Binds host:port (port 0 picks a free one); returns the bound port, or Unavailable
  // naming the address and the cause (e.g. "address already in use").
  StatusOr<int> Bind(const std::string& host, int port);
  // Serves until Stop(); blocks the calling thread.
  void Run();
  void Stop();

  // Every route registered, in registration order.
  std::vector<RouteInfo> Routes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace frugal::api
