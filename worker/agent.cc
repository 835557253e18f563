#include "worker/agent.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
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

// The node credential, readable by the worker's user only (0600, written whole).
Status SaveCredential(const std::string& path, const std::string& credential) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot write " + tmp);
  const std::string text = credential + "\n";
  const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  fsync(fd) == 0;
  close(fd);
  if (!ok || rename(tmp.c_str(), path.c_str()) != 0) return Internal("cannot write " + path);
  return Status::Ok();
}

}  // namespace

Agent::Agent(AgentOptions options, api::Client& client, ProcessRunner& runner,
             NoticeWatcher& notices, const Clock& clock, GpuStatsFn gpu_stats, SleepFn sleep)
    : options_(std::move(options)),
      client_(client),
      runner_(runner),
      notices_(notices),
      clock_(clock),
      gpu_stats_(std::move(gpu_stats)),
      sleep_(std::move(sleep)),
      gpus_(options_.gpus),
      job_users_(options_.job_users) {
  join_token_ = options_.join_token;
  credential_path_ = options_.work_dir + "/node.credential";
  if (!sleep_) sleep_ = [](Millis d) { std::this_thread::sleep_for(d); };
  if (!gpu_stats_) gpu_stats_ = [] { return json::array(); };
}

Status Agent::Run(const std::function<bool()>& should_stop) {
  RETURN_IF_ERROR(CleanUpPreviousLife());
  RETURN_IF_ERROR(RegisterFirst(should_stop));
  for (;;) {
    if (!stopping_ && should_stop()) BeginShutdown();
    if (!stopping_) {
      const bool notice = notices_.Check();
      if (notices_.hint_changed()) {
        // An early warning (AWS rebalance recommendation), not a notice: logged, never drained on.
        spdlog::log(notices_.hint() ? spdlog::level::warn : spdlog::level::info,
                    R"("event":"interruption_hint","active":{},"source":"{}")", notices_.hint(),
                    JsonEscape(notices_.hint_source()));
      }
      if (notice && !notice_) OnNotice();
      if (!notice && notice_) OnNoticeWithdrawn();
    }
    ServiceAttempts();
    EnforceLease();
    if (stopping_ && (attempts_.empty() || clock_.Now() >= give_up_at_)) break;
    const bool due = clock_.Now() >= next_heartbeat_;
    const bool woken = dispatch_.exchange(false);
    // A wake-up's orders in hand need no heartbeat of their own (decision 0038).
    const bool delivered = woken && TakeDelivered() && !due;
    if (due || (woken && !delivered)) {
      next_heartbeat_ = clock_.Now() + heartbeat_interval_;
      Heartbeat();
      EnforceLease();
    }
    SyncJournal();  // what this pass started or ended, in one write
    sleep_(options_.tick);
  }
  SyncJournal();
  for (auto& [id, a] : attempts_) {
    // Its journal record stays: the next life reports a result it has, and kills what is left.
    spdlog::error(R"("event":"attempt_unreported","attempt_id":{},"outcome":"{}")", id,
                  protocol::ToString(OutcomeOf(a)));
    if (!a.exited) runner_.SignalGroup(a.pid, SIGKILL);
  }
  spdlog::info(R"("event":"worker_stopped","node":"{}")", JsonEscape(options_.node));
  return Status::Ok();
}

// --- registration and the lease ---

Status Agent::CleanUpPreviousLife() {
  // Every process of a uid reserved for jobs is a job of an earlier life of this worker.
  if (const int swept = job_users_.SweepAll(); swept > 0) {
    spdlog::warn(R"("event":"leftover_jobs_killed","uids":{})", swept);
  }
  // Without its record of attempts a worker could run a job twice: that is fatal.
  if (Status st = journal_.Open(options_.work_dir); !st.ok()) {
    return Status(st.code(), "the attempt journal: " + st.message());
  }
  const auto previous = journal_.attempts();  // a copy: the loop forgets some
  for (const auto& [id, state] : previous) {
    const std::string dir = options_.work_dir + "/attempt-" + std::to_string(id);
    if (state.pgid > 0 && KillIfSameLeader(state.pgid, state.leader_start)) {
      spdlog::warn(R"("event":"leftover_attempt_killed","attempt_id":{},"pgid":{})",
                   state.attempt_id, state.pgid);
    }
    if (state.uid) job_users_.Sweep(*state.uid);
    if (!state.outcome || state.lease_kill) {
      // It was running when the worker died: the scheduler ends it when this node
      // registers again, and runs it elsewhere from its checkpoint.
      journal_.Forget(id);
      continue;
    }
    // It ended but its result never reached the scheduler: report it, never run it again.
    Attempt a;
    a.order.attempt_id = state.attempt_id;
    a.order.job_id = state.job_id;
    a.order.fence = state.fence;
    a.dir = dir;
    a.lease_epoch = state.lease_epoch;
    a.exited = true;
    a.exit_code = state.exit_code;
    a.stop_outcome = state.outcome;
    a.log_capped = true;  // how much was shipped is unknown: the file stays on this node
    seen_.insert(a.order.attempt_id);
    attempts_.insert_or_assign(a.order.attempt_id, std::move(a));
    spdlog::info(R"("event":"unreported_result_found","attempt_id":{},"outcome":"{}")",
                 state.attempt_id, protocol::ToString(*state.outcome));
  }
  SyncJournal();
  std::ifstream in(credential_path_);
  std::getline(in, credential_);
  return Status::Ok();
}

Status Agent::RegisterFirst(const std::function<bool()>& should_stop) {
  Millis backoff{500};
  for (;;) {
    if (should_stop()) return Status::Ok();
    Status st = Register();
    if (st.ok()) return st;
    // Conflict: the node's lease is still held (by this worker's previous life without its
    // credential file, or by an impostor); it lapses within one TTL.
    if (st.code() != StatusCode::kUnavailable && st.code() != StatusCode::kInternal &&
        st.code() != StatusCode::kConflict) {
      return Status(st.code(), "registration refused: " + st.message(), st.field());
    }
    spdlog::warn(R"("event":"register_failed","retry_ms":{},"error":"{}")", backoff.count(),
                 JsonEscape(st.message()));
    for (Millis slept{0}; slept < backoff && !should_stop(); slept += options_.tick) {
      sleep_(options_.tick);
    }
    backoff = std::min(backoff * 2, Millis(5000));
  }
}

Status Agent::Register() {
  if (!credential_.empty()) {
    Status st = RegisterWith(credential_, true);
    // Unknown: the node was registered again by someone else, or the database is new.
    if (st.code() != StatusCode::kUnauthenticated) return st;
    spdlog::warn(R"("event":"node_credential_refused","error":"{}")", JsonEscape(st.message()));
    credential_.clear();
    if (options_.on_credential) options_.on_credential("");
  }
  return RegisterWith(join_token_, false);
}

Status Agent::RegisterWith(const std::string& token, bool with_credential) {
  json body = {{"node", options_.node},
               {"pool", options_.pool},
               {"gpus", options_.gpus},
               {"gpu_type", options_.gpu_type},
               {"gpu_mem_gb", options_.gpu_mem_gb}};
  if (!options_.address.empty()) body["address"] = options_.address;
  const Timestamp sent_at = clock_.Now();
  client_.set_token(token);
  auto posted = Post("/v1/workers/register", body);
  client_.set_token(credential_);
  ASSIGN_OR_RETURN(auto r, std::move(posted));
  RETURN_IF_ERROR(ResponseStatus(r));
  const auto epoch = IntField(r.body, "lease_epoch");
  const auto ttl = IntField(r.body, "lease_ttl_seconds");
  const std::string credential = StringField(r.body, "node_credential");
  if (!epoch || !ttl || *ttl < 1 || credential.empty()) {
    return Internal("registration answer lacks lease fields or the node credential");
  }
  credential_ = credential;
  client_.set_token(credential_);
  if (options_.on_credential) options_.on_credential(credential_);
  if (Status st = SaveCredential(credential_path_, credential_); !st.ok()) {
    spdlog::warn(R"("event":"credential_not_saved","error":"{}")", JsonEscape(st.message()));
  }
  const auto hb = IntField(r.body, "heartbeat_seconds");
  registered_ = true;
  lease_doubt_ = false;
  lease_epoch_ = *epoch;
  SetLease(Millis(*ttl * 1000), hb ? std::optional<Millis>(Millis(*hb * 1000)) : std::nullopt);
  lease_safe_until_ = sent_at + lease_ttl_ * 8 / 10;
  next_heartbeat_ = clock_.Now();  // at once: that is how assignments arrive
  spdlog::info(
      R"("event":"worker_registered","node":"{}","pool":"{}","lease_epoch":{},"lease_ttl_ms":{},"heartbeat_ms":{},"with":"{}")",
      JsonEscape(options_.node), JsonEscape(options_.pool), lease_epoch_, lease_ttl_.count(),
      heartbeat_interval_.count(), with_credential ? "node credential" : "join token");
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

bool Agent::CanReport() const {
  return registered_ && !lease_doubt_ && clock_.Now() < lease_safe_until_;
}

void Agent::EnforceLease() {
  if (!registered_ || lease_doubt_ || clock_.Now() < lease_safe_until_) return;
  // The scheduler may soon declare this node lost and run its jobs elsewhere: stop them
  // here first. Results already in stay, to be reported once the scheduler answers.
  LoseLease("no successful heartbeat for 0.8 x lease TTL");
}

void Agent::LoseLease(const std::string& why) {
  spdlog::error(R"("event":"lease_lost","lease_epoch":{},"why":"{}","attempts":{})", lease_epoch_,
                JsonEscape(why), attempts_.size());
  lease_doubt_ = true;
  for (auto& [id, a] : attempts_) {
    if (!a.report || a.exited) continue;
    runner_.SignalGroup(a.pid, SIGKILL);
    a.stop_outcome = Outcome::kPreempted;
    a.lease_kill = true;
    spdlog::warn(R"("event":"attempt_killed","job_id":{},"attempt_id":{},"why":"{}")",
                 a.order.job_id, id, JsonEscape(why));
  }
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
  if (r->status == 409 || r->status == 401) {
    // The node was declared lost or registered again: nothing of this epoch is active on
    // the scheduler. Kill what runs; keep finished results for reporting.
    if (!lease_doubt_) LoseLease("heartbeat refused: lease epoch " + std::to_string(lease_epoch_) +
                                 " is stale");
    // Before registering again (which ends every attempt of the old epoch and lets the
    // scheduler place their jobs anew), hand over the results that are in: a job that
    // finished while the scheduler was out of reach is then never run again.
    if (r->status == 409) ReportLateResults();
    registered_ = false;
    if (r->status == 401) {
      credential_.clear();
      if (options_.on_credential) options_.on_credential("");
    }
    if (!stopping_) next_heartbeat_ = clock_.Now();  // register again at once
    return;
  }
  if (Status st = ResponseStatus(*r); !st.ok()) {
    spdlog::warn(R"("event":"heartbeat_failed","error":"{}")", JsonEscape(st.message()));
    return;
  }
  if (lease_doubt_) spdlog::info(R"("event":"lease_kept","lease_epoch":{})", lease_epoch_);
  lease_doubt_ = false;
  lease_safe_until_ = sent_at + lease_ttl_ * 8 / 10;
  HandleReply(r->body);
}

void Agent::ReportLateResults() {
  SyncJournal();
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    Attempt& a = it->second;
    const bool result = a.report && a.exited && !a.lease_kill;
    it = result && Finish(a) == Progress::kDone ? attempts_.erase(it) : std::next(it);
  }
}

void Agent::Dispatch(json reply) {
  {
    std::lock_guard<std::mutex> lock(delivered_mu_);
    delivered_ = std::move(reply);
  }
  dispatch_.store(true);
}

bool Agent::TakeDelivered() {
  json reply;
  {
    std::lock_guard<std::mutex> lock(delivered_mu_);
    reply = std::move(delivered_);
    delivered_ = json();
  }
  // Only orders of this very lease, while it is sure; otherwise the heartbeat decides.
  const auto epoch = reply.is_object() ? IntField(reply, "lease_epoch") : std::nullopt;
  if (!registered_ || lease_doubt_ || !epoch || *epoch != lease_epoch_ ||
      !reply.contains("assignments")) {
    return false;
  }
  HandleReply(reply);
  return true;
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
      auto reason = protocol::ParseStopReason(StringField(s, "reason"));
      if (!reason.ok()) {
        spdlog::warn(R"("event":"unknown_stop_reason","attempt_id":{},"error":"{}")", *id,
                     JsonEscape(reason.status().message()));
      }
      // Stop it anyway; preempted does not count against the job.
      const auto why = reason.ok() ? *reason : protocol::StopReason::kPreempted;
      if (why != protocol::StopReason::kStale) pending_fences_[*id] = StringField(s, "fence");
      HandleStop(*id, why);
    }
  }
  if (auto orders = reply.find("assignments"); orders != reply.end() && orders->is_array()) {
    // One scan of /proc for the uids of all of them (a sweep's burst of assignments).
    if (job_users_.per_attempt() && runner_.RunsProcesses() && !orders->empty()) {
      busy_uids_ = UidsWithProcesses();
    }
    for (const auto& o : *orders) HandleAssignment(o);
    busy_uids_.reset();
  }
}

void Agent::HandleStop(std::int64_t attempt_id, protocol::StopReason reason) {
  const auto it = attempts_.find(attempt_id);
  if (reason == protocol::StopReason::kStale) {
    if (it != attempts_.end() && it->second.report) {
      Abandon(it->second, "the scheduler says it is no longer active here");
    }
    return;
  }
  const Outcome outcome = protocol::OutcomeOf(reason);
  if (it != attempts_.end()) {
    Attempt& a = it->second;
    if (a.report && !a.exited && !a.stop_outcome) Stop(a, outcome);
    return;
  }
  // Never started here (it may have been waiting for GPUs, or never delivered): end it so
  // the job moves on. The stop order carries the fence for exactly this.
  if (seen_.count(attempt_id)) return;
  StartOrder order;
  order.attempt_id = attempt_id;
  if (auto f = pending_fences_.find(attempt_id); f != pending_fences_.end()) order.fence = f->second;
  if (!protocol::IsFence(order.fence)) {
    spdlog::warn(R"("event":"stop_without_fence","attempt_id":{})", attempt_id);
    return;
  }
  Settle(order, outcome, std::string("stopped (") + protocol::ToString(reason) +
                             ") before it started");
}

void Agent::HandleAssignment(const json& j) {
  auto order = ParseStartOrder(j);
  if (!order.ok()) {
    // Without a well-formed fence it cannot even be reported failed; the scheduler's
    // administrators see this in the log.
    const auto id = IntField(j, "attempt_id");  // find() on a non-object finds nothing
    spdlog::error(R"("event":"bad_assignment","attempt_id":{},"error":"{}")", id.value_or(0),
                  JsonEscape(order.status().message()));
    return;
  }
  const StartOrder& o = *order;
  if (seen_.count(o.attempt_id)) return;  // a re-sent assignment: it already runs
  if (notice_ || stopping_) {
    Settle(o, Outcome::kPreempted, "not started: this node is going away");
    return;
  }
  if (o.gpus > gpus_.total()) {
    Settle(o, Outcome::kFailed,
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
  StopAll(Outcome::kPreempted);
  // Tell the scheduler now that this node is going away (the notice flag drains it), or
  // it may place work here in the moments before the lease runs out.
  Heartbeat();
  next_heartbeat_ = clock_.Now() + heartbeat_interval_;
}

void Agent::OnNotice() {
  notice_ = true;
  spdlog::warn(R"("event":"interruption_notice","source":"{}","attempts":{})",
               JsonEscape(notices_.source()), attempts_.size());
  StopAll(Outcome::kPreempted);
  next_heartbeat_ = clock_.Now();  // tell the scheduler now: it stops placing work here
}

void Agent::OnNoticeWithdrawn() {
  // Not reclaimed after all: the scheduler makes the node ready again when the next
  // heartbeat carries no notice (decision 0021). What the notice stopped stays stopped.
  notice_ = false;
  spdlog::info(R"("event":"notice_withdrawn","attempts":{})", attempts_.size());
  next_heartbeat_ = clock_.Now();
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
