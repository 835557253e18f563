#include "worker/agent.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <thread>

#include "common/log.h"

namespace frugal::worker {

using nlohmann::json;

namespace {

std::string Describe(const StatusOr<api::ClientResponse>& r) {
  return JsonEscape(r.ok() ? ResponseStatus(*r).message() : r.status().message());
}

std::optional<std::int64_t> IntField(const json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<std::int64_t>();
}

std::string StringField(const json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

}  // namespace

StatusOr<Assignment> ParseAssignment(const json& j) {
  try {
    // get<int> of a float out of int's range is undefined behaviour, not an exception
    // (worker_assignment_fuzz: "attempt": 1.1e83): whole numbers only.
    for (const char* key : {"attempt_id", "job_id", "attempt", "gpus", "resume_step",
                            "max_runtime_seconds"}) {
      const auto it = j.find(key);
      if (it != j.end() && !it->is_null() && !it->is_number_integer()) {
        return InvalidArgument(std::string("malformed assignment: ") + key +
                               " must be a whole number");
      }
    }
    Assignment a;
    a.attempt_id = j.at("attempt_id").get<std::int64_t>();
    a.job_id = j.at("job_id").get<std::int64_t>();
    a.attempt = j.at("attempt").get<int>();
    a.gpus = j.at("gpus").get<int>();
    a.command = j.at("command").get<std::vector<std::string>>();
    a.env = j.value("env", std::map<std::string, std::string>{});
    a.working_dir = j.value("working_dir", "");
    a.resume_from = j.value("resume_from", "");
    if (j.contains("resume_step") && !j["resume_step"].is_null()) {
      a.resume_step = j["resume_step"].get<std::int64_t>();
    }
    if (j.contains("max_runtime_seconds") && !j["max_runtime_seconds"].is_null()) {
      a.max_runtime = std::chrono::seconds(j["max_runtime_seconds"].get<std::int64_t>());
    }
    if (a.attempt_id < 1 || a.gpus < 0 || a.command.empty()) {
      return InvalidArgument("assignment needs an attempt id, gpus >= 0 and a command");
    }
    return a;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed assignment: ") + e.what());
  }
}

Agent::Agent(AgentOptions options, api::Client& client, ProcessRunner& runner,
             NoticeWatcher& notices, const Clock& clock, GpuStatsFn gpu_stats, SleepFn sleep)
    : options_(std::move(options)),
      client_(client),
      runner_(runner),
      notices_(notices),
      clock_(clock),
      gpu_stats_(std::move(gpu_stats)),
      sleep_(std::move(sleep)),
      gpus_(options_.gpus) {
  if (!sleep_) sleep_ = [](Millis d) { std::this_thread::sleep_for(d); };
  if (!gpu_stats_) gpu_stats_ = [] { return json::array(); };
}

Status Agent::Run(const std::function<bool()>& should_stop) {
  RETURN_IF_ERROR(RegisterFirst(should_stop));
  for (;;) {
    if (!stopping_ && should_stop()) BeginShutdown();
    if (!notice_ && !stopping_ && notices_.Check()) OnNotice();
    ServiceAttempts();
    EnforceLease();
    if (stopping_ && (attempts_.empty() || clock_.Now() >= give_up_at_)) break;
    if (clock_.Now() >= next_heartbeat_) {
      next_heartbeat_ = clock_.Now() + heartbeat_interval_;
      Heartbeat();
      EnforceLease();
    }
    sleep_(options_.tick);
  }
  for (auto& [id, a] : attempts_) {
    spdlog::error(R"("event":"attempt_unreported","attempt_id":{},"outcome":"{}")", id,
                  OutcomeOf(a));
    if (!a.exited) runner_.SignalGroup(a.pid, SIGKILL);
  }
  spdlog::info(R"("event":"worker_stopped","node":"{}")", JsonEscape(options_.node));
  return Status::Ok();
}

// --- registration and the lease ---

Status Agent::RegisterFirst(const std::function<bool()>& should_stop) {
  Millis backoff{500};
  for (;;) {
    if (should_stop()) return Status::Ok();
    Status st = Register();
    if (st.ok()) return st;
    if (st.code() != StatusCode::kUnavailable && st.code() != StatusCode::kInternal) {
      return Status(st.code(), "registration refused: " + st.message(), st.field());
    }
    spdlog::warn(R"("event":"register_failed","retry_ms":{},"error":"{}")", backoff.count(),
                 JsonEscape(st.message()));
    for (Millis slept{0}; slept < backoff && !should_stop(); slept += options_.tick) {
      sleep_(options_.tick);
    }
    backoff = std::min(backoff * 2, Millis(10000));
  }
}

Status Agent::Register() {
  const json body = {{"node", options_.node},
                     {"pool", options_.pool},
                     {"gpus", options_.gpus},
                     {"gpu_type", options_.gpu_type},
                     {"gpu_mem_gb", options_.gpu_mem_gb}};
  const Timestamp sent_at = clock_.Now();
  ASSIGN_OR_RETURN(auto r, Post("/v1/workers/register", body));
  RETURN_IF_ERROR(ResponseStatus(r));
  const auto epoch = IntField(r.body, "lease_epoch");
  const auto ttl = IntField(r.body, "lease_ttl_seconds");
  if (!epoch || !ttl || *ttl < 1) return Internal("registration answer lacks lease fields");
  const auto hb = IntField(r.body, "heartbeat_seconds");
  registered_ = true;
  lease_epoch_ = *epoch;
  SetLease(Millis(*ttl * 1000), hb ? std::optional<Millis>(Millis(*hb * 1000)) : std::nullopt);
  lease_safe_until_ = sent_at + lease_ttl_ * 8 / 10;
  next_heartbeat_ = clock_.Now();  // at once: that is how assignments arrive
  spdlog::info(
      R"("event":"worker_registered","node":"{}","pool":"{}","lease_epoch":{},"lease_ttl_ms":{},"heartbeat_ms":{})",
      JsonEscape(options_.node), JsonEscape(options_.pool), lease_epoch_, lease_ttl_.count(),
      heartbeat_interval_.count());
  return Status::Ok();
}

void Agent::SetLease(Millis ttl, std::optional<Millis> heartbeat) {
  lease_ttl_ = ttl;
  if (options_.heartbeat_interval) heartbeat = options_.heartbeat_interval;
  if (heartbeat) heartbeat_interval_ = *heartbeat;
  // At least three heartbeats per TTL, so one lost reply never costs the lease.
  heartbeat_interval_ =
      std::clamp(heartbeat_interval_, Millis(100), std::max(ttl / 3, Millis(100)));
}

bool Agent::CanReport() const { return registered_ && clock_.Now() < lease_safe_until_; }

void Agent::EnforceLease() {
  if (!registered_ || clock_.Now() < lease_safe_until_) return;
  // The scheduler will soon declare this node lost and run its jobs elsewhere: stop them
  // here first. Reporting is pointless (the epoch is about to be stale).
  AbandonAll("no successful heartbeat for 0.8 x lease TTL");
}

void Agent::Heartbeat() {
  if (!registered_) {
    if (stopping_) return;  // nothing of ours is active on the scheduler any more
    Status st = Register();
    if (!st.ok()) {
      spdlog::warn(R"("event":"register_failed","error":"{}")", JsonEscape(st.message()));
    }
    return;
  }
  json running = json::array();
  std::vector<std::pair<std::int64_t, std::vector<int>>> indices;  // for the usage samples
  for (const auto& [id, a] : attempts_) {
    if (!a.report) continue;
    running.push_back(id);
    if (a.pid != 0 && !a.exited) indices.emplace_back(id, a.gpu_indices);
  }
  json gpus = gpu_stats_();
  json usage = AttemptUsageJson(gpus, indices);
  const json body = {{"node", options_.node},
                     {"lease_epoch", lease_epoch_},
                     {"running", running},
                     {"gpus", std::move(gpus)},
                     {"usage", std::move(usage)},
                     {"notice", notice_}, {"draining", stopping_}};
  const Timestamp sent_at = clock_.Now();
  auto r = Post("/v1/workers/heartbeat", body);
  if (!r.ok()) return;
  if (r->status == 409) {
    AbandonAll("heartbeat refused: lease epoch " + std::to_string(lease_epoch_) + " is stale");
    if (!stopping_) next_heartbeat_ = clock_.Now();  // register again at once
    return;
  }
  if (Status st = ResponseStatus(*r); !st.ok()) {
    spdlog::warn(R"("event":"heartbeat_failed","error":"{}")", JsonEscape(st.message()));
    return;
  }
  lease_safe_until_ = sent_at + lease_ttl_ * 8 / 10;
  HandleReply(r->body);
}

void Agent::HandleReply(const json& reply) {
  if (!reply.is_object()) return;
  if (auto ttl = IntField(reply, "lease_ttl_seconds"); ttl && *ttl >= 1) {
    SetLease(Millis(*ttl * 1000), std::nullopt);
  }
  // Stops first: an attempt both assigned and stopped in one reply is settled, not started.
  if (auto stops = reply.find("stop"); stops != reply.end() && stops->is_array()) {
    for (const auto& s : *stops) {
      const auto id = IntField(s, "attempt_id");
      if (!id) continue;
      HandleStop(*id, StringField(s, "reason"));
    }
  }
  if (auto orders = reply.find("assignments"); orders != reply.end() && orders->is_array()) {
    for (const auto& o : *orders) HandleAssignment(o);
  }
}

void Agent::HandleStop(std::int64_t attempt_id, std::string reason) {
  const auto it = attempts_.find(attempt_id);
  if (reason == "stale") {
    if (it != attempts_.end() && it->second.report) {
      Abandon(it->second, "the scheduler says it is no longer active here");
    }
    return;
  }
  if (reason != "cancelled" && reason != "preempted" && reason != "timed_out") {
    spdlog::warn(R"("event":"unknown_stop_reason","attempt_id":{},"reason":"{}")", attempt_id,
                 JsonEscape(reason));
    reason = "preempted";  // stop it anyway; preempted does not count against the job
  }
  if (it != attempts_.end()) {
    Attempt& a = it->second;
    if (a.report && !a.exited && a.stop_outcome.empty()) Stop(a, reason);
    return;
  }
  // Never started here (it may have been waiting for GPUs): end it so the job moves on.
  if (!seen_.count(attempt_id))
    Settle(attempt_id, reason, "stopped (" + reason + ") before it started");
}

void Agent::HandleAssignment(const json& j) {
  auto order = ParseAssignment(j);
  if (!order.ok()) {
    const auto id = IntField(j, "attempt_id");  // find() on a non-object finds nothing
    spdlog::error(R"("event":"bad_assignment","attempt_id":{},"error":"{}")", id.value_or(0),
                  JsonEscape(order.status().message()));
    if (id && !seen_.count(*id)) Settle(*id, "failed", order.status().message());
    return;
  }
  const Assignment& o = *order;
  if (seen_.count(o.attempt_id)) return;  // a re-sent assignment: it already runs
  if (notice_ || stopping_) {
    Settle(o.attempt_id, "preempted", "not started: this node is going away");
    return;
  }
  if (o.gpus > gpus_.total()) {
    Settle(o.attempt_id, "failed",
           "asks for " + std::to_string(o.gpus) + " GPUs; node " + options_.node + " has " +
               std::to_string(gpus_.total()));
    return;
  }
  auto indices = gpus_.Allocate(o.gpus);
  if (!indices) {
    // A stopped attempt still holds them. The scheduler re-sends the assignment until
    // it is reported running, so simply try again then.
    spdlog::debug(R"("event":"waiting_for_gpus","attempt_id":{},"gpus":{},"free":{})", o.attempt_id,
                  o.gpus, gpus_.free_count());
    return;
  }
  Start(o, std::move(*indices));
}

void Agent::BeginShutdown() {
  stopping_ = true;
  give_up_at_ = clock_.Now() + options_.grace + options_.report_after_shutdown;
  spdlog::info(R"("event":"worker_stopping","attempts":{})", attempts_.size());
  StopAll("preempted");
  // Tell the scheduler now that this node is going away (the notice flag drains it), or
  // it may place work here in the moments before the lease runs out.
  Heartbeat();
  next_heartbeat_ = clock_.Now() + heartbeat_interval_;
}

void Agent::OnNotice() {
  notice_ = true;
  spdlog::warn(R"("event":"interruption_notice","source":"{}","attempts":{})",
               JsonEscape(notices_.source()), attempts_.size());
  StopAll("preempted");
  next_heartbeat_ = clock_.Now();  // tell the scheduler now: it stops placing work here
}

StatusOr<api::ClientResponse> Agent::Post(const std::string& path, const json& body) {
  auto r = client_.Post(path, body);
  const bool reachable = r.ok() && r->status < 500;
  if (reachable != scheduler_reachable_) {
    if (reachable) {
      spdlog::info(R"("event":"scheduler_reachable")");
    } else {
      spdlog::warn(R"("event":"scheduler_unreachable","error":"{}")", Describe(r));
    }
    scheduler_reachable_ = reachable;
  }
  return r;
}

}  // namespace frugal::worker
