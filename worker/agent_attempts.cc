// The Agent's attempt lifecycle: start, stop, reap, and report (checkpoints in step order,
// then output, then how it ended). The loop and the protocol's lease are in agent.cc.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include "common/log.h"
#include "worker/agent.h"
#include "worker/spool.h"

namespace frugal::worker {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr std::int64_t kLogChunk = 64 * 1024;
constexpr std::int64_t kLogCap = 1 << 20;   // the server keeps no more per attempt either
constexpr std::int64_t kCapNoteRoom = 512;  // kept free below the cap for the "truncated" note
constexpr int kChunksPerTick = 4;           // one chatty job must not starve the others
// The worker's own credentials: a job never holds one (it reports through the spool).
const std::vector<std::string> kCredentialVars = {"FRUGAL_WORKER_TOKEN", "FRUGAL_TOKEN"};

// What an answer to an attempt report means for the attempt.
enum class Answer { kOk, kStale, kRejected, kRetry };

Answer Classify(const StatusOr<api::ClientResponse>& r) {
  if (!r.ok()) return Answer::kRetry;  // unreachable or garbled: try again next tick
  if (r->status >= 200 && r->status < 300) return Answer::kOk;
  if (r->status == 409) return Answer::kStale;
  if (r->status >= 500) return Answer::kRetry;
  return Answer::kRejected;  // the same report would be refused the same way again
}

std::string Describe(const StatusOr<api::ClientResponse>& r) {
  return JsonEscape(r.ok() ? ResponseStatus(*r).message() : r.status().message());
}

std::string AttemptPath(std::int64_t id, const char* what) {
  return "/v1/workers/attempts/" + std::to_string(id) + "/" + what;
}

std::string ExitText(const std::optional<int>& code) {
  if (!code) return "no exit code";
  if (*code < 0) return "killed by signal " + std::to_string(-*code);
  return "exit code " + std::to_string(*code);
}

}  // namespace

// --- starting ---

Agent::Attempt& Agent::Track(Attempt a) {
  seen_.insert(a.order.attempt_id);
  a.dir = options_.work_dir + "/attempt-" + std::to_string(a.order.attempt_id);
  std::error_code ec;
  fs::create_directories(a.spool(), ec);  // if this fails, starting fails and says why
  return attempts_.insert_or_assign(a.order.attempt_id, std::move(a)).first->second;
}

void Agent::Start(const Assignment& order, std::vector<int> gpu_indices) {
  Attempt fresh;
  fresh.order = order;
  fresh.gpu_indices = std::move(gpu_indices);
  fresh.started_at = clock_.Now();
  Attempt& a = Track(std::move(fresh));
  const std::string checkpoint_dir = FrugalEnv(a).at("FRUGAL_CHECKPOINT_DIR");
  const std::string cwd = order.working_dir.empty() ? a.dir : order.working_dir;
  std::error_code ec;
  fs::create_directories(checkpoint_dir, ec);
  AppendOutputLine(a.output(),
                   "[frugal-worker] job " + std::to_string(order.job_id) + " attempt " +
                       std::to_string(order.attempt) + " on node " + options_.node +
                       ", CUDA_VISIBLE_DEVICES=" + JoinIndices(a.gpu_indices) +
                       (order.resume_from.empty() ? "" : ", resuming from " + order.resume_from));
  StatusOr<pid_t> pid = Internal("not started");
  if (ec) {
    pid = Internal("cannot create " + checkpoint_dir + ": " + ec.message());
  } else if (!fs::is_directory(cwd, ec)) {
    pid = NotFound("working directory " + cwd + " does not exist on " + options_.node);
  } else {
    pid = runner_.Start(
        {order.command,
         MergeEnvironment(options_.base_env, kCredentialVars, order.env, FrugalEnv(a)), cwd,
         a.output()});
  }
  if (!pid.ok()) {
    AppendOutputLine(a.output(), "[frugal-worker] " + pid.status().message());
    spdlog::error(R"("event":"attempt_start_failed","job_id":{},"attempt_id":{},"error":"{}")",
                  order.job_id, order.attempt_id, JsonEscape(pid.status().message()));
    gpus_.Release(a.gpu_indices);
    a.gpu_indices.clear();
    a.exited = true;  // reported failed, without an exit code
    return;
  }
  a.pid = *pid;
  spdlog::info(
      R"("event":"attempt_started","job_id":{},"attempt":{},"attempt_id":{},"pid":{},"gpus":"{}","resume_from":"{}")",
      order.job_id, order.attempt, order.attempt_id, a.pid, JoinIndices(a.gpu_indices),
      JsonEscape(order.resume_from));
}

void Agent::Settle(std::int64_t attempt_id, const std::string& outcome, const std::string& note) {
  Attempt a;
  a.order.attempt_id = attempt_id;
  a.exited = true;
  a.stop_outcome = outcome;
  Attempt& tracked = Track(std::move(a));
  AppendOutputLine(tracked.output(), "[frugal-worker] " + note);
  spdlog::info(R"("event":"attempt_settled","attempt_id":{},"outcome":"{}","note":"{}")",
               attempt_id, outcome, JsonEscape(note));
}

std::map<std::string, std::string> Agent::FrugalEnv(const Attempt& a) const {
  const Assignment& o = a.order;
  return {{"FRUGAL_JOB_ID", std::to_string(o.job_id)},
          {"FRUGAL_ATTEMPT", std::to_string(o.attempt)},
          {"FRUGAL_ATTEMPT_ID", std::to_string(o.attempt_id)},
          {"FRUGAL_NODE", options_.node},
          {"FRUGAL_CHECKPOINT_DIR", options_.checkpoint_root + "/" + std::to_string(o.job_id)},
          {"FRUGAL_RESUME_FROM", o.resume_from},
          {"FRUGAL_RESUME_STEP", o.resume_step ? std::to_string(*o.resume_step) : ""},
          {"FRUGAL_CHECKPOINT_SPOOL", a.spool()},
          {"CUDA_VISIBLE_DEVICES", JoinIndices(a.gpu_indices)}};
}

// --- stopping ---

void Agent::Stop(Attempt& a, const std::string& outcome) {
  a.stop_outcome = outcome;
  runner_.SignalGroup(a.pid, SIGTERM);
  a.kill_at = clock_.Now() + options_.grace;
  spdlog::info(
      R"("event":"attempt_stopping","job_id":{},"attempt_id":{},"outcome":"{}","grace_ms":{})",
      a.order.job_id, a.order.attempt_id, outcome, options_.grace.count());
}

void Agent::StopAll(const std::string& outcome) {
  for (auto& [id, a] : attempts_) {
    if (a.report && !a.exited && a.stop_outcome.empty()) Stop(a, outcome);
  }
}

void Agent::Abandon(Attempt& a, const std::string& why) {
  if (!a.exited) runner_.SignalGroup(a.pid, SIGKILL);
  a.report = false;
  spdlog::warn(R"("event":"attempt_abandoned","job_id":{},"attempt_id":{},"why":"{}")",
               a.order.job_id, a.order.attempt_id, JsonEscape(why));
}

void Agent::AbandonAll(const std::string& why) {
  spdlog::error(R"("event":"lease_lost","lease_epoch":{},"why":"{}","attempts":{})", lease_epoch_,
                JsonEscape(why), attempts_.size());
  for (auto& [id, a] : attempts_) {
    if (a.report) Abandon(a, why);
  }
  registered_ = false;
}

// --- reaping and reporting ---

void Agent::ServiceAttempts() {
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    it = Service(it->second) ? attempts_.erase(it) : std::next(it);
  }
}

bool Agent::Service(Attempt& a) {
  Reap(a);
  if (!a.report) return a.exited;
  EnforceDeadlines(a);
  if (!CanReport()) return false;
  // The spool first, always: a final checkpoint written during the grace period must be
  // committed before /finish makes the job resumable from "its latest checkpoint".
  const Progress spool = ForwardSpool(a);
  const Progress logs = spool == Progress::kStale ? spool : ShipLogs(a);
  if (spool == Progress::kStale || logs == Progress::kStale) {
    Abandon(a, "a report was refused: the attempt is stale");
    return a.exited;
  }
  if (!a.exited || spool != Progress::kDone || logs != Progress::kDone) return false;
  return Finish(a) != Progress::kLater;
}

void Agent::Reap(Attempt& a) {
  if (a.exited || a.pid == 0) return;
  const ReapResult r = runner_.Reap(a.pid);
  if (r.running) return;
  a.exited = true;
  a.exit_code = r.exit_code;
  gpus_.Release(a.gpu_indices);
  a.gpu_indices.clear();
  if (!a.report) return;
  AppendOutputLine(a.output(), "[frugal-worker] attempt ended: " + OutcomeOf(a) + " (" +
                                   ExitText(a.exit_code) + ")");
  spdlog::info(R"("event":"attempt_exited","job_id":{},"attempt_id":{},"exit":"{}","outcome":"{}")",
               a.order.job_id, a.order.attempt_id, ExitText(a.exit_code), OutcomeOf(a));
}

void Agent::EnforceDeadlines(Attempt& a) {
  if (a.exited) return;
  const Timestamp now = clock_.Now();
  if (a.order.max_runtime && a.stop_outcome.empty() && now - a.started_at >= *a.order.max_runtime) {
    Stop(a, "timed_out");
  }
  if (a.kill_at && now >= *a.kill_at) {
    runner_.SignalGroup(a.pid, SIGKILL);
    a.kill_at.reset();
    spdlog::warn(
        R"("event":"attempt_killed","job_id":{},"attempt_id":{},"why":"still running after the grace period")",
        a.order.job_id, a.order.attempt_id);
  }
}

Agent::Progress Agent::ForwardSpool(Attempt& a) {
  for (const SpoolEntry& e : ListSpool(a.spool())) {
    std::error_code ec;
    if (!e.status.ok()) {
      spdlog::warn(
          R"("event":"checkpoint_report_unreadable","attempt_id":{},"file":"{}","error":"{}")",
          a.order.attempt_id, JsonEscape(e.path), JsonEscape(e.status.message()));
      fs::remove(e.path, ec);
      continue;
    }
    if (!CanReport()) return Progress::kLater;
    json body = ToJson(e.report);
    body["lease_epoch"] = lease_epoch_;
    const auto r = Post(AttemptPath(a.order.attempt_id, "checkpoint"), body);
    switch (Classify(r)) {
      case Answer::kOk:
        spdlog::info(
            R"("event":"checkpoint_committed","job_id":{},"attempt_id":{},"step":{},"uri":"{}")",
            a.order.job_id, a.order.attempt_id, e.report.step, JsonEscape(e.report.uri));
        break;
      case Answer::kRejected:  // e.g. 422: the step does not advance; a resume never goes back
        spdlog::warn(
            R"("event":"checkpoint_rejected","job_id":{},"attempt_id":{},"step":{},"error":"{}")",
            a.order.job_id, a.order.attempt_id, e.report.step, Describe(r));
        break;
      case Answer::kStale:
        return Progress::kStale;
      case Answer::kRetry:
        return Progress::kLater;
    }
    fs::remove(e.path, ec);
  }
  return Progress::kDone;
}

Agent::Progress Agent::ShipLogs(Attempt& a) {
  for (int i = 0; i < kChunksPerTick && !a.log_capped; ++i) {
    // Below 4 bytes of room (one character) the read only tells whether more output waits.
    const std::int64_t room = kLogCap - kCapNoteRoom - a.log_sent;
    const bool full = room < 4;
    const auto chunk = ReadOutput(a.output(), a.log_offset,
                                  static_cast<size_t>(full ? 4 : std::min(room, kLogChunk)));
    if (!chunk.ok()) {
      spdlog::warn(R"("event":"output_unreadable","attempt_id":{},"error":"{}")",
                   a.order.attempt_id, JsonEscape(chunk.status().message()));
      a.log_capped = true;
      break;
    }
    if (chunk->data.empty()) return Progress::kDone;
    if (full) {
      a.log_capped = true;
      return PostLog(a, "\n[frugal-worker] output beyond 1 MiB is not shipped; all of it is in " +
                            a.output() + " on " + options_.node + "\n");
    }
    const Progress p = PostLog(a, chunk->data);
    if (p != Progress::kDone) return p;
    a.log_offset = chunk->next_offset;
    a.log_sent += static_cast<std::int64_t>(chunk->data.size());
  }
  return a.log_capped ? Progress::kDone : Progress::kLater;
}

Agent::Progress Agent::PostLog(Attempt& a, const std::string& data) {
  const auto r = Post(AttemptPath(a.order.attempt_id, "logs"),
                      {{"lease_epoch", lease_epoch_}, {"data", data}});
  switch (Classify(r)) {
    case Answer::kOk:
      return Progress::kDone;
    case Answer::kStale:
      return Progress::kStale;
    case Answer::kRetry:
      return Progress::kLater;
    case Answer::kRejected:
      break;
  }
  spdlog::warn(R"("event":"logs_rejected","attempt_id":{},"error":"{}")", a.order.attempt_id,
               Describe(r));
  a.log_capped = true;  // the rest would be refused too; the file stays on this node
  return Progress::kDone;
}

Agent::Progress Agent::Finish(Attempt& a) {
  const std::string outcome = OutcomeOf(a);
  const json body = {{"lease_epoch", lease_epoch_},
                     {"outcome", outcome},
                     {"exit_code", a.exit_code ? json(*a.exit_code) : json(nullptr)}};
  const auto r = Post(AttemptPath(a.order.attempt_id, "finish"), body);
  switch (Classify(r)) {
    case Answer::kOk:
      spdlog::info(R"("event":"attempt_reported","job_id":{},"attempt_id":{},"outcome":"{}")",
                   a.order.job_id, a.order.attempt_id, outcome);
      return Progress::kDone;
    case Answer::kRetry:
      return Progress::kLater;
    case Answer::kStale:  // already ended (or we lost the lease): nothing left to tell
    case Answer::kRejected:
      spdlog::warn(
          R"("event":"attempt_report_refused","attempt_id":{},"outcome":"{}","error":"{}")",
          a.order.attempt_id, outcome, Describe(r));
      return Progress::kDone;
  }
  return Progress::kDone;
}

std::string Agent::OutcomeOf(const Attempt& a) const {
  if (!a.stop_outcome.empty()) return a.stop_outcome;
  return a.exit_code == 0 ? "succeeded" : "failed";
}

}  // namespace frugal::worker
