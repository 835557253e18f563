// Worker protocol routes (docs/worker-protocol.md) and job log reading.
#include <spdlog/spdlog.h>

#include "api/routes.h"
#include "common/log.h"
#include "protocol/worker_protocol.h"

namespace frugal::api {

namespace {

// Below the worker client's 30 s read timeout and the server's write timeout.
constexpr std::int64_t kMaxWaitMs = 25000;
// A batch of finish reports: within the 1 MiB body limit with every log at its largest.
constexpr std::size_t kMaxFinishReports = 256;
constexpr std::size_t kMaxFinishLog = 64 * 1024;

StatusOr<std::vector<model::AttemptId>> ParseRunning(const json& body) {
  std::vector<model::AttemptId> out;
  if (!body.contains("running")) return out;
  const json& r = body["running"];
  if (!r.is_array() || r.size() > 1024) {
    return InvalidArgument("running: must be an array of at most 1024 attempt ids", "running");
  }
  for (const auto& v : r) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 1) {
      return InvalidArgument("running: attempt ids are positive integers", "running");
    }
    out.push_back(v.get<std::int64_t>());
  }
  return out;
}

// jsonb cannot hold "\u0000" anywhere, keys included. Depth is bounded by CheckJsonLimits.
bool HasNul(const json& v) {
  if (v.is_string()) return v.get_ref<const std::string&>().find('\0') != std::string::npos;
  if (!v.is_structured()) return false;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (v.is_object() && it.key().find('\0') != std::string::npos) return true;
    if (HasNul(it.value())) return true;
  }
  return false;
}

StatusOr<std::string> ParseGpuStats(const json& body) {
  if (!body.contains("gpus")) return std::string("[]");
  const json& g = body["gpus"];
  if (!g.is_array() || g.size() > 64) {
    return InvalidArgument("gpus: must be an array of at most 64 GPU readings", "gpus");
  }
  for (const auto& e : g) {
    if (!e.is_object() || e.size() > 8) {
      return InvalidArgument("gpus: each reading is an object like {\"index\":0,"
                             "\"utilization\":93,\"memory_used_mb\":30123}",
                             "gpus");
    }
  }
  if (HasNul(g)) return InvalidArgument("gpus: readings must not contain NUL characters", "gpus");
  return g.dump();
}

// Per-attempt GPU samples (guardrails): re-encoded from checked fields only, so the store's
// SQL casts never see anything but integers.
StatusOr<std::string> ParseUsage(const json& body) {
  if (!body.contains("usage")) return std::string("[]");
  const json& u = body["usage"];
  const char* shape = "usage: an array of at most 1024 objects like {\"attempt_id\":7,"
                      "\"utilization\":3,\"memory_used_mb\":11469}";
  if (!u.is_array() || u.size() > 1024) return InvalidArgument(shape, "usage");
  json out = json::array();
  for (const auto& e : u) {
    if (!e.is_object()) return InvalidArgument(shape, "usage");
    RETURN_IF_ERROR(CheckFields(e, {"attempt_id", "utilization", "memory_used_mb"}));
    json clean;
    ASSIGN_OR_RETURN(auto id, RequiredInt(e, "attempt_id", 1, 1LL << 62));
    clean["attempt_id"] = id;
    if (e.contains("utilization") && !e["utilization"].is_null()) {
      ASSIGN_OR_RETURN(auto util, RequiredInt(e, "utilization", 0, 100));
      clean["utilization"] = util;
    }
    if (e.contains("memory_used_mb") && !e["memory_used_mb"].is_null()) {
      ASSIGN_OR_RETURN(auto mem, RequiredInt(e, "memory_used_mb", 0, 1 << 30));
      clean["memory_used_mb"] = mem;
    }
    out.push_back(std::move(clean));
  }
  return out.dump();
}

json EncodeOrder(const store::AttemptOrder& o) {
  const auto& spec = o.spec;
  protocol::StartOrder a;
  a.attempt_id = o.attempt_id;
  a.job_id = o.job_id;
  a.attempt = o.number;
  a.gpus = o.gpus;
  a.command = spec.command;
  a.env = spec.env;
  a.working_dir = spec.working_dir;
  a.resume_from = o.resume_from;
  a.resume_step = o.resume_step;
  a.max_runtime = spec.max_runtime;
  a.fence = o.fence;
  a.rank = o.rank;
  a.gang_size = o.gang_size;
  a.master_addr = o.master_addr;
  a.master_port = o.master_port;
  return protocol::Encode(a);
}

// A node's orders as heartbeat and wait replies carry them: "assignments" and "stop".
void AddOrders(json& reply, const std::vector<store::AttemptOrder>& assignments,
               const std::vector<store::StopOrder>& stops) {
  json starts = json::array(), stop_list = json::array();
  for (const auto& o : assignments) starts.push_back(EncodeOrder(o));
  for (const auto& st : stops) {
    json stop = {{"attempt_id", st.attempt_id}, {"reason", protocol::ToString(st.reason)}};
    if (!st.fence.empty()) stop["fence"] = st.fence;
    stop_list.push_back(std::move(stop));
  }
  reply["assignments"] = std::move(starts);
  reply["stop"] = std::move(stop_list);
}

// The attempt's fence from a report body: required, and well formed before any lookup.
StatusOr<store::AttemptAuth> ParseAuth(const json& body, const store::Principal& who) {
  ASSIGN_OR_RETURN(std::string fence, RequiredString(body, "fence"));
  if (!protocol::IsFence(fence)) {
    return InvalidArgument("fence: the 64 hex characters the assignment gave", "fence");
  }
  return store::AttemptAuth{who.node_id, std::move(fence)};
}

// One report of POST /v1/workers/finish, checked as /logs and /finish check theirs.
StatusOr<store::FinishReport> ParseFinishReport(const json& e, const store::Principal& who) {
  if (!e.is_object()) return InvalidArgument("each report is an object", "reports");
  RETURN_IF_ERROR(
      CheckFields(e, {"attempt_id", "lease_epoch", "fence", "outcome", "exit_code", "log"}));
  store::FinishReport r;
  ASSIGN_OR_RETURN(r.attempt_id, RequiredInt(e, "attempt_id", 1, 1LL << 62));
  ASSIGN_OR_RETURN(r.lease_epoch, RequiredInt(e, "lease_epoch", 1, 1LL << 62));
  ASSIGN_OR_RETURN(auto auth, ParseAuth(e, who));
  r.fence = std::move(auth.fence);
  ASSIGN_OR_RETURN(std::string outcome, RequiredString(e, "outcome"));
  ASSIGN_OR_RETURN(r.outcome, protocol::ParseOutcome(outcome));
  if (e.contains("exit_code") && !e["exit_code"].is_null()) {
    ASSIGN_OR_RETURN(auto code, RequiredInt(e, "exit_code", -255, 255));
    r.exit_code = static_cast<int>(code);
  }
  if (e.contains("log")) {
    if (!e["log"].is_string()) return InvalidArgument("log: a string", "log");
    r.log = e["log"].get<std::string>();
    if (r.log.size() > kMaxFinishLog) {
      return InvalidArgument("log: at most 64 KiB per report; send more through /logs", "log");
    }
  }
  return r;
}

// A node credential speaks for its own node only.
Status CheckSameNode(const store::Principal& who, const std::string& node) {
  if (who.role == store::Role::kNode && who.user != node) {
    return Status(StatusCode::kPermissionDenied,
                  "this credential belongs to node '" + who.user + "', not '" + node.substr(0, 64) + "'",
                  "node");
  }
  return Status::Ok();
}

StatusOr<Reply> Register(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(CheckFields(body, {"node", "pool", "gpus", "gpu_type", "gpu_mem_gb", "address"}));
  model::Node n;
  ASSIGN_OR_RETURN(n.name, RequiredString(body, "node"));
  RETURN_IF_ERROR(ValidateName(n.name, "node", true));
  RETURN_IF_ERROR(CheckSameNode(who, n.name));
  ASSIGN_OR_RETURN(std::string pool, RequiredString(body, "pool"));
  ASSIGN_OR_RETURN(n.gpus, RequiredInt(body, "gpus", 1, 1024));
  ASSIGN_OR_RETURN(n.gpu_type, RequiredString(body, "gpu_type"));
  if (n.gpu_type.empty() || n.gpu_type.size() > 64) {
    return InvalidArgument("gpu_type: 1 to 64 characters", "gpu_type");
  }
  ASSIGN_OR_RETURN(n.gpu_mem_gb, RequiredInt(body, "gpu_mem_gb", 1, 4096));
  // Where a gang's other parts reach this node when it hosts rank 0; optional, as
  // older workers send none (empty).
  if (body.contains("address")) {
    ASSIGN_OR_RETURN(n.address, RequiredString(body, "address"));
    RETURN_IF_ERROR(protocol::CheckAddress(n.address, "address"));
  }
  const auto caller =
      who.role == store::Role::kNode ? std::optional<model::NodeId>(who.node_id) : std::nullopt;
  const auto join =
      who.role == store::Role::kWorker ? std::optional<std::int64_t>(who.token_id) : std::nullopt;
  ASSIGN_OR_RETURN(auto reg,
                   ctx.workers.RegisterWorker(n, pool, ctx.options.lease_ttl, caller, join));
  spdlog::info(
      R"("event":"worker_registered","node":"{}","pool":"{}","lease_epoch":{},"attempts_lost":{})",
      JsonEscape(n.name), JsonEscape(pool), reg.lease_epoch, reg.attempts_lost);
  ctx.engine.Kick();
  return Reply{200,
               {{"node_id", reg.node_id},
                {"node_credential", reg.credential},
                {"lease_epoch", reg.lease_epoch},
                {"lease_ttl_seconds", ctx.options.lease_ttl.count()},
                {"heartbeat_seconds", ctx.options.heartbeat_interval.count()}}};
}

StatusOr<Reply> Heartbeat(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(
      CheckFields(body, {"node", "lease_epoch", "running", "gpus", "usage", "notice", "draining"}));
  store::HeartbeatRequest hb;
  ASSIGN_OR_RETURN(hb.node, RequiredString(body, "node"));
  RETURN_IF_ERROR(CheckSameNode(who, hb.node));
  hb.node_id = who.node_id;
  ASSIGN_OR_RETURN(hb.lease_epoch, RequiredInt(body, "lease_epoch", 1, 1LL << 62));
  ASSIGN_OR_RETURN(hb.running, ParseRunning(body));
  ASSIGN_OR_RETURN(hb.gpu_stats_json, ParseGpuStats(body));
  ASSIGN_OR_RETURN(hb.usage_json, ParseUsage(body));
  if (body.contains("notice")) {
    if (!body["notice"].is_boolean()) return InvalidArgument("notice: must be a boolean", "notice");
    hb.notice = body["notice"].get<bool>();
  }
  if (body.contains("draining")) {
    if (!body["draining"].is_boolean())
      return InvalidArgument("draining: must be a boolean", "draining");
    hb.draining = body["draining"].get<bool>();
  }
  ASSIGN_OR_RETURN(auto reply, ctx.workers.Heartbeat(hb, ctx.options.lease_ttl));
  if (reply.notice_withdrawn) {
    spdlog::info(R"("event":"notice_withdrawn","node":"{}","lease_epoch":{})", JsonEscape(hb.node),
                 hb.lease_epoch);
    ctx.engine.Kick();  // it takes work again
  }
  json out = {{"lease_ttl_seconds", ctx.options.lease_ttl.count()}};
  AddOrders(out, reply.assignments, reply.stops);
  return Reply{200, std::move(out)};
}

// Long-poll for work (decision 0027): answers as soon as a committed cycle gave this node
// assignments or stop orders, or after wait_ms. A change carries the orders themselves,
// read without writing anything (decision 0038), with the lease epoch they belong to; the
// worker's next heartbeat acknowledges them and renews the lease. Until a change, it
// reads nothing from the database after authentication.
StatusOr<Reply> Wait(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(CheckFields(body, {"node", "seen", "wait_ms"}));
  ASSIGN_OR_RETURN(std::string node, RequiredString(body, "node"));
  RETURN_IF_ERROR(CheckSameNode(who, node));
  ASSIGN_OR_RETURN(auto seen, RequiredInt(body, "seen", 0, 1LL << 62));
  ASSIGN_OR_RETURN(auto wait_ms, RequiredInt(body, "wait_ms", 0, kMaxWaitMs));
  const auto generation =
      ctx.engine.WaitForWork(who.node_id, seen, std::chrono::milliseconds(wait_ms));
  json out = {{"generation", generation}, {"changed", generation != seen}};
  if (generation != seen) {
    // Unreadable now: the worker's heartbeat brings them, as before.
    if (auto orders = ctx.workers.ReadOrders(who.node_id); orders.ok() && orders->lease_epoch > 0) {
      out["lease_epoch"] = orders->lease_epoch;
      AddOrders(out, orders->assignments, orders->stops);
    }
  }
  return Reply{200, std::move(out)};
}

StatusOr<Reply> Checkpoint(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  store::CheckpointReport r;
  ASSIGN_OR_RETURN(r.attempt_id, ParseId(req.matches[1], "attempt_id"));
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(
      CheckFields(body, {"lease_epoch", "fence", "step", "progress", "uri", "size_bytes"}));
  ASSIGN_OR_RETURN(r.lease_epoch, RequiredInt(body, "lease_epoch", 1, 1LL << 62));
  ASSIGN_OR_RETURN(auto auth, ParseAuth(body, who));
  ASSIGN_OR_RETURN(r.step, RequiredInt(body, "step", 0, 1LL << 62));
  ASSIGN_OR_RETURN(r.uri, RequiredString(body, "uri"));
  if (r.uri.empty() || r.uri.size() > 4096)
    return InvalidArgument("uri: 1 to 4096 characters", "uri");
  if (body.contains("progress")) {
    if (!body["progress"].is_number() || body["progress"].get<double>() < 0 ||
        body["progress"].get<double>() > 1) {
      return InvalidArgument("progress: must be a number between 0 and 1", "progress");
    }
    r.progress = body["progress"].get<double>();
  }
  if (body.contains("size_bytes")) {
    ASSIGN_OR_RETURN(r.size_bytes, RequiredInt(body, "size_bytes", 0, 1LL << 62));
  }
  RETURN_IF_ERROR(ctx.workers.CommitCheckpoint(r, auth));
  return Reply{200, {{"committed", true}, {"step", r.step}}};
}

StatusOr<Reply> AppendLog(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  ASSIGN_OR_RETURN(auto attempt, ParseId(req.matches[1], "attempt_id"));
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(CheckFields(body, {"lease_epoch", "fence", "data"}));
  ASSIGN_OR_RETURN(auto epoch, RequiredInt(body, "lease_epoch", 1, 1LL << 62));
  ASSIGN_OR_RETURN(auto auth, ParseAuth(body, who));
  ASSIGN_OR_RETURN(std::string data, RequiredString(body, "data"));
  if (data.size() > 256 * 1024) return InvalidArgument("data: at most 256 KiB per chunk", "data");
  RETURN_IF_ERROR(ctx.workers.AppendLog(attempt, epoch, data, ctx.options.log_cap_bytes, auth));
  return Reply{200, {{"accepted", data.size()}}};
}

StatusOr<Reply> Finish(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  ASSIGN_OR_RETURN(auto attempt, ParseId(req.matches[1], "attempt_id"));
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(CheckFields(body, {"lease_epoch", "fence", "outcome", "exit_code"}));
  ASSIGN_OR_RETURN(auto epoch, RequiredInt(body, "lease_epoch", 1, 1LL << 62));
  ASSIGN_OR_RETURN(auto auth, ParseAuth(body, who));
  ASSIGN_OR_RETURN(std::string outcome_text, RequiredString(body, "outcome"));
  ASSIGN_OR_RETURN(auto outcome, protocol::ParseOutcome(outcome_text));
  std::optional<int> exit_code;
  if (body.contains("exit_code") && !body["exit_code"].is_null()) {
    ASSIGN_OR_RETURN(auto code, RequiredInt(body, "exit_code", -255, 255));
    exit_code = static_cast<int>(code);
  }
  ASSIGN_OR_RETURN(auto job, ctx.workers.FinishAttempt(attempt, epoch, outcome, exit_code, auth));
  spdlog::info(
      R"("event":"attempt_finished","job_id":{},"attempt_id":{},"outcome":"{}","job_state":"{}")",
      job.id, attempt, outcome_text, model::ToString(job.state));
  ctx.engine.Kick();  // GPUs were freed, and the job may need placing again
  return Reply{200, EncodeJob(job)};
}

// Batched finish (decision 0027): many attempts' last output and result in one request and
// one transaction; each report is judged as /attempts/{id}/logs then /finish would judge
// it alone, and answered with its own status.
StatusOr<Reply> FinishBatch(Context& ctx, const httplib::Request& req,
                            const store::Principal& who) {
  ASSIGN_OR_RETURN(json body, ParseObject(req.body));
  RETURN_IF_ERROR(CheckFields(body, {"reports"}));
  const json& list = body.contains("reports") ? body["reports"] : json();
  if (!list.is_array() || list.empty() || list.size() > kMaxFinishReports) {
    return InvalidArgument(
        "reports: an array of 1 to " + std::to_string(kMaxFinishReports) + " finish reports",
        "reports");
  }
  std::vector<store::FinishReport> reports;
  for (std::size_t i = 0; i < list.size(); ++i) {
    auto r = ParseFinishReport(list[i], who);
    if (!r.ok()) {
      const std::string at = "reports[" + std::to_string(i) + "]";
      const Status& st = r.status();
      return Status(st.code(), at + ": " + st.message(),
                    st.field().empty() ? at : at + "." + st.field());
    }
    reports.push_back(std::move(r).value());
  }
  ASSIGN_OR_RETURN(auto results, ctx.workers.FinishAttempts(reports, ctx.options.log_cap_bytes,
                                                            {who.node_id, ""}));
  json out = json::array();
  bool freed = false;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const auto& res = results[i];
    json item = {{"attempt_id", reports[i].attempt_id}};
    if (res.status.ok()) {
      freed = true;
      item["status"] = 200;
      item["job_id"] = res.job_id;
      item["job_state"] = model::ToString(res.state);
      spdlog::info(
          R"("event":"attempt_finished","job_id":{},"attempt_id":{},"outcome":"{}","job_state":"{}")",
          res.job_id, reports[i].attempt_id, protocol::ToString(reports[i].outcome),
          model::ToString(res.state));
    } else {
      item["status"] = HttpStatus(res.status.code());
      item["error"] = EncodeError(res.status)["error"];
    }
    out.push_back(std::move(item));
  }
  if (freed) ctx.engine.Kick();  // GPUs were freed, and jobs may need placing again
  return Reply{200, {{"results", out}}};
}

StatusOr<Reply> ReadLogs(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  RETURN_IF_ERROR(CheckQueryParams(req, {"after"}));
  ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
  std::int64_t after = 0;
  const Query q = ParseQuery(req);
  if (auto it = q.find("after"); it != q.end() && it->second != "0") {
    ASSIGN_OR_RETURN(after, ParseId(it->second, "after"));
  }
  ASSIGN_OR_RETURN(auto chunks, ctx.workers.ReadLogs(id, VisibleTeam(who), after, 200));
  json out = json::array();
  for (const auto& c : chunks) {
    out.push_back({{"seq", c.seq}, {"attempt", c.attempt}, {"data", c.data}});
    after = c.seq;
  }
  return Reply{200, {{"chunks", out}, {"next", after}}};
}

}  // namespace

void RegisterWorkerRoutes(Router& s, Context& ctx) {
  // Each route: who may call it, and the handler above that decodes, calls one store
  // method, and encodes.
  const auto bind = [&ctx](Access access, auto handler) {
    return Route(ctx, access, [&ctx, handler](const httplib::Request& req, auto& who) {
      return handler(ctx, req, *who);
    });
  };
  s.Post("/v1/workers/register", bind(Access::kJoin, Register));
  s.Post("/v1/workers/heartbeat", bind(Access::kNode, Heartbeat));
  s.Post("/v1/workers/wait", bind(Access::kNode, Wait));
  s.Post(R"(/v1/workers/attempts/([^/]+)/checkpoint)", bind(Access::kNode, Checkpoint));
  s.Post(R"(/v1/workers/attempts/([^/]+)/logs)", bind(Access::kNode, AppendLog));
  s.Post(R"(/v1/workers/attempts/([^/]+)/finish)", bind(Access::kNode, Finish));
  s.Post("/v1/workers/finish", bind(Access::kNode, FinishBatch));
  s.Get(R"(/v1/jobs/([^/]+)/logs)", bind(Access::kUsers, ReadLogs));
}

}  // namespace frugal::api
