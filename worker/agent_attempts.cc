// The Agent's attempt lifecycle: start, stop, reap, and report (checkpoints in step order,
// then output, then how it ended). The loop and the protocol's lease are in agent.cc.
#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

#include "common/crypto.h"
#include "common/log.h"
#include "protocol/spool.h"
#include "worker/agent.h"

namespace frugal::worker {

namespace fs = std::filesystem;
using nlohmann::json;
using protocol::ListSpool;
using protocol::SpoolEntry;
using protocol::ToJson;

namespace {

constexpr std::int64_t kLogChunk = 64 * 1024;
constexpr std::int64_t kLogCap = 1 << 20;   // the server keeps no more per attempt either
constexpr std::int64_t kCapNoteRoom = 512;  // kept free below the cap for the "truncated" note
constexpr int kChunksPerTick = 4;           // one chatty job must not starve the others
constexpr std::size_t kFinishBatch = 256;    // reports per POST /v1/workers/finish
constexpr std::size_t kFinishBatchBytes = 768 * 1024;
// The worker's own credentials: a job never holds one (it reports through the spool). The
// job's environment starts from the pass_env allow-list, so these are a second line.
const std::vector<std::string> kCredentialVars = {"FRUGAL_WORKER_TOKEN", "FRUGAL_TOKEN"};

// Makes `path` a directory owned by `id` (or the worker) with `mode`, whatever was there.
Status OwnedDir(const std::string& path, const std::optional<JobIdentity>& id, mode_t mode) {
  std::error_code ec;
  fs::create_directories(path, ec);
  if (ec) return Internal("cannot create " + path + ": " + ec.message());
  if (id && chown(path.c_str(), id->uid, id->gid) != 0) return Internal("cannot chown " + path);
  if (chmod(path.c_str(), mode) != 0) return Internal("cannot chmod " + path);
  return Status::Ok();
}

// Hands an existing tree (a job's checkpoints from earlier attempts, written under other
// uids) to `id`, without following links a job may have planted.
void ChownTree(const std::string& root, const JobIdentity& id) {
  std::error_code ec;
  lchown(root.c_str(), id.uid, id.gid);
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    lchown(it->path().c_str(), id.uid, id.gid);
  }
}

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
  pending_fences_.erase(a.order.attempt_id);
  a.dir = options_.work_dir + "/attempt-" + std::to_string(a.order.attempt_id);
  a.in_memory = !runner_.RunsProcesses();
  // The worker's own: jobs may pass through it to their job/ and spool/, not list or write it.
  if (!a.in_memory) (void)OwnedDir(a.dir, std::nullopt, 0711);
  return attempts_.insert_or_assign(a.order.attempt_id, std::move(a)).first->second;
}

void Agent::SaveState(const Attempt& a) {
  AttemptState st;
  st.attempt_id = a.order.attempt_id;
  st.job_id = a.order.job_id;
  st.lease_epoch = a.lease_epoch;
  st.fence = a.order.fence;
  st.pgid = a.pid;
  st.leader_start = a.leader_start;
  if (a.identity && a.identity->own_uid) st.uid = a.identity->uid;
  if (a.exited) {
    st.outcome = OutcomeOf(a);
    st.exit_code = a.exit_code;
  }
  st.lease_kill = a.lease_kill;
  journal_.Put(st);
}

void Agent::SyncJournal() {
  if (Status s = journal_.Sync(); !s.ok()) {
    spdlog::warn(R"("event":"attempt_journal_not_saved","error":"{}")", JsonEscape(s.message()));
  }
}

void Agent::Note(Attempt& a, const std::string& line) {
  if (a.in_memory) {
    a.notes += line + "\n";
  } else {
    AppendOutputLine(a.output(), line);
  }
}

StatusOr<OutputChunk> Agent::ReadOutputOf(const Attempt& a, std::int64_t offset,
                                          size_t max) const {
  if (!a.in_memory) return ReadOutput(a.output(), offset, max);
  const auto from = std::min(a.notes.size(), static_cast<size_t>(offset));
  return DecodeOutput(std::string_view(a.notes).substr(from), offset, max);
}

Status Agent::PrepareDirs(const Attempt& a, const std::string& checkpoint_dir) {
  // The job's own: its working directory (also HOME and TMPDIR) and its spool, where no other
  // attempt's uid can read or write.
  RETURN_IF_ERROR(OwnedDir(a.job_dir(), a.identity, 0700));
  RETURN_IF_ERROR(OwnedDir(a.spool(), a.identity, 0700));
  RETURN_IF_ERROR(OwnedDir(checkpoint_dir, a.identity, 0700));
  if (a.identity) ChownTree(checkpoint_dir, *a.identity);
  // Checked once per uid: the check forks, and what it depends on (the work dir's parents;
  // the attempt dir, 0711, and the job dir, the uid's own, are made above) is the same for
  // every attempt.
  if (!a.identity || reachable_uids_.count(a.identity->uid)) return Status::Ok();
  RETURN_IF_ERROR(job_users_.CheckReachable(a.identity, a.job_dir()));
  reachable_uids_.insert(a.identity->uid);
  return Status::Ok();
}

void Agent::Start(const StartOrder& order, std::vector<int> gpu_indices) {
  Attempt fresh;
  fresh.order = order;
  fresh.gpu_indices = std::move(gpu_indices);
  fresh.started_at = clock_.Now();
  fresh.lease_epoch = lease_epoch_;
  fresh.secret = NewSecretHex();
  // Nothing runs under --noop: no uid to take, no directories to make (decision 0035).
  const bool runs = runner_.RunsProcesses();
  auto identity = runs ? job_users_.Acquire(busy_uids_ ? &*busy_uids_ : nullptr)
                       : StatusOr<std::optional<JobIdentity>>(std::nullopt);
  if (identity.ok()) fresh.identity = *identity;
  Attempt& a = Track(std::move(fresh));
  const std::string checkpoint_dir = FrugalEnv(a).at("FRUGAL_CHECKPOINT_DIR");
  const std::string cwd = order.working_dir.empty() ? a.job_dir() : order.working_dir;
  Note(a,
       "[frugal-worker] job " + std::to_string(order.job_id) + " attempt " +
                       std::to_string(order.attempt) + " on node " + options_.node +
                       ", CUDA_VISIBLE_DEVICES=" + JoinIndices(a.gpu_indices) +
                       (a.identity ? ", uid " + std::to_string(a.identity->uid) : "") +
                       (order.resume_from.empty() ? "" : ", resuming from " + order.resume_from));
  StatusOr<pid_t> pid = Internal("not started");
  std::error_code ec;
  if (!identity.ok()) {
    pid = identity.status();
  } else if (Status st = runs ? PrepareDirs(a, checkpoint_dir) : Status::Ok(); !st.ok()) {
    pid = st;
  } else if (runs && !fs::is_directory(cwd, ec)) {
    pid = NotFound("working directory " + cwd + " does not exist on " + options_.node);
  } else {
    // HOME and TMPDIR first, so a job's own env may set others.
    std::vector<std::string> base = options_.base_env;
    base.push_back("HOME=" + a.job_dir());
    base.push_back("TMPDIR=" + a.job_dir());
    pid = runner_.Start({order.command,
                         MergeEnvironment(base, kCredentialVars, order.env, FrugalEnv(a)), cwd,
                         a.output(), a.identity, /*keeper=*/true});
  }
  if (!pid.ok()) {
    Note(a, "[frugal-worker] " + pid.status().message());
    spdlog::error(R"("event":"attempt_start_failed","job_id":{},"attempt_id":{},"error":"{}")",
                  order.job_id, order.attempt_id, JsonEscape(pid.status().message()));
    gpus_.Release(a.gpu_indices);
    a.gpu_indices.clear();
    if (a.identity) job_users_.Release(a.identity->uid);
    a.exited = true;  // reported failed, without an exit code
    SaveState(a);
    return;
  }
  a.pid = *pid;
  a.leader_start = ProcessStartTime(a.pid).value_or(0);
  SaveState(a);
  spdlog::info(
      R"("event":"attempt_started","job_id":{},"attempt":{},"attempt_id":{},"pid":{},"gpus":"{}","uid":{},"resume_from":"{}")",
      order.job_id, order.attempt, order.attempt_id, a.pid, JoinIndices(a.gpu_indices),
      a.identity ? static_cast<long>(a.identity->uid) : static_cast<long>(getuid()),
      JsonEscape(order.resume_from));
}

void Agent::Settle(const StartOrder& order, Outcome outcome, const std::string& note) {
  Attempt a;
  a.order = order;
  a.lease_epoch = lease_epoch_;
  a.exited = true;
  a.stop_outcome = outcome;
  Attempt& tracked = Track(std::move(a));
  Note(tracked, "[frugal-worker] " + note);
  SaveState(tracked);
  spdlog::info(R"("event":"attempt_settled","attempt_id":{},"outcome":"{}","note":"{}")",
               order.attempt_id, protocol::ToString(outcome), JsonEscape(note));
}

// The job's checkpoint directory under the (shared) checkpoint root. A gang's parts run as
// different uids on different nodes and each attempt is handed its directory (PrepareDirs
// chowns it): rank 0 owns the job's, whose checkpoints it commits (decision 0032); any
// other rank gets one of its own beside it, so the parts never take a directory from
// each other.
std::string Agent::CheckpointDir(const StartOrder& o) const {
  std::string dir = options_.checkpoint_root + "/" + std::to_string(o.job_id);
  if (o.gang_size > 1 && o.rank > 0) dir += "-rank-" + std::to_string(o.rank);
  return dir;
}

std::map<std::string, std::string> Agent::FrugalEnv(const Attempt& a) const {
  const StartOrder& o = a.order;
  std::map<std::string, std::string> env = {
      {"FRUGAL_JOB_ID", std::to_string(o.job_id)},
      {"FRUGAL_ATTEMPT", std::to_string(o.attempt)},
      {"FRUGAL_ATTEMPT_ID", std::to_string(o.attempt_id)},
      {"FRUGAL_NODE", options_.node},
      {"FRUGAL_CHECKPOINT_DIR", CheckpointDir(o)},
      {"FRUGAL_RESUME_FROM", o.resume_from},
      {"FRUGAL_RESUME_STEP", o.resume_step ? std::to_string(*o.resume_step) : ""},
      {"FRUGAL_CHECKPOINT_SPOOL", a.spool()},
      {"FRUGAL_CHECKPOINT_SECRET", a.secret},
      {"CUDA_VISIBLE_DEVICES", JoinIndices(a.gpu_indices)}};
  if (o.gang_size > 1) {
    // A part of a multi-node gang, in the names distributed launchers use: MASTER_ADDR and
    // MASTER_PORT are what PyTorch's env:// initialisation reads, and the PET_* copies are
    // torchrun's own defaults for --nnodes, --node-rank, --master-addr and --master-port,
    // so a bare `torchrun train.py` joins the gang. WORLD_SIZE and RANK count one process
    // per node, for a program that starts one per node and calls env:// itself; torchrun
    // replaces both for each process it starts.
    env["MASTER_ADDR"] = o.master_addr;
    env["MASTER_PORT"] = std::to_string(o.master_port);
    env["NODE_RANK"] = std::to_string(o.rank);
    env["NNODES"] = std::to_string(o.gang_size);
    env["WORLD_SIZE"] = std::to_string(o.gang_size);
    env["RANK"] = std::to_string(o.rank);
    env["FRUGAL_GANG_RANK"] = std::to_string(o.rank);
    env["FRUGAL_GANG_SIZE"] = std::to_string(o.gang_size);
    env["PET_NNODES"] = env["NNODES"];
    env["PET_NODE_RANK"] = env["NODE_RANK"];
    env["PET_MASTER_ADDR"] = env["MASTER_ADDR"];
    env["PET_MASTER_PORT"] = env["MASTER_PORT"];
  }
  return env;
}

// --- stopping ---

void Agent::Stop(Attempt& a, Outcome outcome) {
  a.stop_outcome = outcome;
  runner_.SignalGroup(a.pid, SIGTERM);
  a.kill_at = clock_.Now() + options_.grace;
  spdlog::info(
      R"("event":"attempt_stopping","job_id":{},"attempt_id":{},"outcome":"{}","grace_ms":{})",
      a.order.job_id, a.order.attempt_id, protocol::ToString(outcome), options_.grace.count());
}

void Agent::StopAll(Outcome outcome) {
  for (auto& [id, a] : attempts_) {
    if (a.report && !a.exited && !a.stop_outcome) Stop(a, outcome);
  }
}

void Agent::Abandon(Attempt& a, const std::string& why) {
  if (!a.exited) runner_.SignalGroup(a.pid, SIGKILL);
  a.report = false;
  journal_.Forget(a.order.attempt_id);
  spdlog::warn(R"("event":"attempt_abandoned","job_id":{},"attempt_id":{},"why":"{}")",
               a.order.job_id, a.order.attempt_id, JsonEscape(why));
}

// --- reaping and reporting ---

void Agent::ServiceAttempts() {
  std::vector<std::int64_t> ready;
  for (auto it = attempts_.begin(); it != attempts_.end();) {
    const Next next = Service(it->second);
    if (next == Next::kFinish) ready.push_back(it->first);
    it = next == Next::kDone ? attempts_.erase(it) : std::next(it);
  }
  SweepEnded();  // before the reports free the GPUs for other jobs
  if (!ready.empty()) {
    SyncJournal();
    FinishReady(ready);
  }
}

void Agent::SweepEnded() {
  if (ended_uids_.empty()) return;
  std::vector<uid_t> own;
  for (const auto& id : ended_uids_) {
    if (id.own_uid) own.push_back(id.uid);
  }
  job_users_.Sweep(own);
  for (const auto& id : ended_uids_) job_users_.Release(id.uid);
  ended_uids_.clear();
}

Agent::Next Agent::Service(Attempt& a) {
  Reap(a);
  if (!a.report) return a.exited ? Next::kDone : Next::kKeep;
  EnforceDeadlines(a);
  if (!CanReport()) return Next::kKeep;
  // The spool first, always: a final checkpoint written during the grace period must be
  // committed before /finish makes the job resumable from "its latest checkpoint".
  const Progress spool = ForwardSpool(a);
  // An ended attempt whose remaining output fits in one chunk sends it with its finish
  // report: one request for both (decision 0027).
  if (spool == Progress::kDone && a.exited && batch_finish_ && TakeFinalLog(a)) {
    return Next::kFinish;
  }
  const Progress logs = spool == Progress::kStale ? spool : ShipLogs(a);
  const bool stale = spool == Progress::kStale || logs == Progress::kStale;
  if (stale && !a.exited) {
    Abandon(a, "a report was refused: the attempt is stale");
    return Next::kKeep;
  }
  // A stale attempt that already ended still reports how: the scheduler takes a late result
  // for a job it has not placed again (a finished job is never run twice).
  if (!a.exited || (!stale && (spool != Progress::kDone || logs != Progress::kDone))) {
    return Next::kKeep;
  }
  return Next::kFinish;
}

bool Agent::TakeFinalLog(Attempt& a) {
  a.final_log.clear();
  if (a.log_capped) return true;
  const std::int64_t room = kLogCap - kCapNoteRoom - a.log_sent;
  if (room < kLogChunk) return false;  // near the cap: ShipLogs writes the note
  const auto chunk = ReadOutputOf(a, a.log_offset, static_cast<size_t>(kLogChunk));
  std::error_code ec;
  const auto size = a.in_memory ? a.notes.size() : fs::file_size(a.output(), ec);
  if (!chunk.ok() || ec || static_cast<std::int64_t>(size) != chunk->next_offset) return false;
  a.final_log = chunk->data;
  return true;
}

void Agent::FinishReady(const std::vector<std::int64_t>& ids) {
  // Batches stay well inside the scheduler's 1 MiB body limit and 256 reports.
  std::vector<std::int64_t> group;
  json reports = json::array();
  std::size_t bytes = 0;
  for (const auto id : ids) {
    if (!batch_finish_) return FinishOneByOne({id});
    const Attempt& a = attempts_.at(id);
    json r = protocol::FinishBody(a.lease_epoch, a.order.fence, OutcomeOf(a), a.exit_code);
    r["attempt_id"] = id;
    if (!a.final_log.empty()) r["log"] = a.final_log;
    const std::size_t size = r.dump(-1, ' ', false, json::error_handler_t::replace).size();
    if (!group.empty() && (group.size() == kFinishBatch || bytes + size > kFinishBatchBytes)) {
      FinishGroup(group, std::move(reports));
      group.clear();
      reports = json::array();
      bytes = 0;
    }
    group.push_back(id);
    reports.push_back(std::move(r));
    bytes += size;
  }
  if (!group.empty()) FinishGroup(group, std::move(reports));
}

void Agent::FinishGroup(const std::vector<std::int64_t>& ids, json reports) {
  if (!batch_finish_) return FinishOneByOne(ids);
  const auto r = Post("/v1/workers/finish", {{"reports", std::move(reports)}});
  if (r.ok() && r->status == 404) {
    spdlog::warn(R"("event":"batch_finish_unsupported","note":"reporting one by one")");
    batch_finish_ = false;
    return FinishOneByOne(ids);
  }
  const json* results = nullptr;
  if (Classify(r) == Answer::kOk && r->body.contains("results") && r->body["results"].is_array() &&
      r->body["results"].size() == ids.size()) {
    results = &r->body["results"];
  }
  if (results == nullptr) {
    if (Classify(r) != Answer::kRetry) {
      // The batch itself was refused: report one by one, as a scheduler without it would.
      spdlog::warn(R"("event":"batch_finish_refused","error":"{}")", Describe(r));
      batch_finish_ = false;
      FinishOneByOne(ids);
    }
    return;  // retried at the next tick
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    Attempt& a = attempts_.at(ids[i]);
    const json& item = (*results)[i];
    const int status = item.value("status", 500);
    if (status >= 500) continue;  // this one again at the next tick
    if (status == 200) {
      spdlog::info(R"("event":"attempt_reported","job_id":{},"attempt_id":{},"outcome":"{}")",
                   a.order.job_id, ids[i], protocol::ToString(OutcomeOf(a)));
    } else {
      // Already ended (or the lease was lost and the job was placed again): nothing to tell.
      spdlog::warn(R"("event":"attempt_report_refused","attempt_id":{},"outcome":"{}","error":"{}")",
                   ids[i], protocol::ToString(OutcomeOf(a)),
                   JsonEscape(item.value("error", json::object()).value("message", "")));
    }
    journal_.Forget(a.order.attempt_id);
    attempts_.erase(ids[i]);
  }
}

void Agent::FinishOneByOne(const std::vector<std::int64_t>& ids) {
  for (const auto id : ids) {
    Attempt& a = attempts_.at(id);
    if (!a.final_log.empty()) {
      if (PostLog(a, a.final_log) != Progress::kDone) continue;  // Service ships it next time
      a.log_offset += static_cast<std::int64_t>(a.final_log.size());
      a.log_sent += static_cast<std::int64_t>(a.final_log.size());
      a.final_log.clear();
    }
    if (Finish(a) != Progress::kLater) attempts_.erase(id);
  }
}

void Agent::Reap(Attempt& a) {
  if (a.exited || a.pid == 0) return;
  const ReapResult r = runner_.Reap(a.pid);
  if (r.running) return;
  a.exited = true;
  a.exit_code = r.exit_code;
  gpus_.Release(a.gpu_indices);
  a.gpu_indices.clear();
  if (a.identity) {
    // Whatever the job left under its uid (daemons, setsid escapees) dies with it, swept
    // with the other uids that ended in this pass (one scan of /proc), then released.
    ended_uids_.push_back(*a.identity);
  }
  if (!a.report) return;
  SaveState(a);  // the result survives a worker restart until the scheduler has it
  const char* outcome = protocol::ToString(OutcomeOf(a));
  Note(a, std::string("[frugal-worker] attempt ended: ") + outcome + " (" +
              ExitText(a.exit_code) + ")");
  spdlog::info(R"("event":"attempt_exited","job_id":{},"attempt_id":{},"exit":"{}","outcome":"{}")",
               a.order.job_id, a.order.attempt_id, ExitText(a.exit_code), outcome);
}

void Agent::EnforceDeadlines(Attempt& a) {
  if (a.exited) return;
  const Timestamp now = clock_.Now();
  if (a.order.max_runtime && !a.stop_outcome && now - a.started_at >= *a.order.max_runtime) {
    Stop(a, Outcome::kTimedOut);
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
    if (!ConstantTimeEquals(e.report.secret, a.secret)) {
      // Not written by this attempt's job: another job on this node, or a leftover of a
      // previous life (whose secret died with it). Never forwarded.
      spdlog::warn(
          R"("event":"checkpoint_report_refused","attempt_id":{},"file":"{}","why":"wrong secret")",
          a.order.attempt_id, JsonEscape(e.path));
      fs::remove(e.path, ec);
      continue;
    }
    if (!CanReport()) return Progress::kLater;
    const auto r = Post(AttemptPath(a.order.attempt_id, "checkpoint"), Fenced(a, ToJson(e.report)));
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
    const auto chunk = ReadOutputOf(a, a.log_offset,
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
  const auto r = Post(AttemptPath(a.order.attempt_id, "logs"), Fenced(a, {{"data", data}}));
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
  const Outcome outcome = OutcomeOf(a);
  const auto r = Post(AttemptPath(a.order.attempt_id, "finish"),
                      protocol::FinishBody(a.lease_epoch, a.order.fence, outcome, a.exit_code));
  const Answer answer = Classify(r);
  if (answer == Answer::kRetry) return Progress::kLater;
  if (answer == Answer::kOk) {
    spdlog::info(R"("event":"attempt_reported","job_id":{},"attempt_id":{},"outcome":"{}")",
                 a.order.job_id, a.order.attempt_id, protocol::ToString(outcome));
  } else {
    // Already ended (or the lease was lost and the job was placed again): nothing to tell.
    spdlog::warn(R"("event":"attempt_report_refused","attempt_id":{},"outcome":"{}","error":"{}")",
                 a.order.attempt_id, protocol::ToString(outcome), Describe(r));
  }
  journal_.Forget(a.order.attempt_id);
  return Progress::kDone;
}

Outcome Agent::OutcomeOf(const Attempt& a) const {
  if (a.stop_outcome) return *a.stop_outcome;
  return a.exit_code == 0 ? Outcome::kSucceeded : Outcome::kFailed;
}

json Agent::Fenced(const Attempt& a, json body) const {
  body["lease_epoch"] = a.lease_epoch;
  body["fence"] = a.order.fence;
  return body;
}

}  // namespace frugal::worker
