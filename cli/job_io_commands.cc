// `frugal logs` (read a job's output, optionally following it) and `frugal checkpoint`
// (run inside a job: hand a committed-on-disk checkpoint to the local worker).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <ostream>
#include <thread>

#include "cli/command_table.h"
#include "protocol/spool.h"
#include "scheduler/model/job.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

bool Terminal(const std::string& state) {
  auto s = model::ParseJobState(state);
  return s.ok() && model::IsTerminal(*s);
}

Status RunLogs(Session& s, std::int64_t id, bool follow) {
  std::int64_t after = 0;
  const std::string path = "/v1/jobs/" + std::to_string(id);
  int last_attempt = 0;
  for (;;) {
    ASSIGN_OR_RETURN(auto r, s.client.Get(path + "/logs?after=" + std::to_string(after)));
    RETURN_IF_ERROR(api::ResponseStatus(r));
    const json& chunks = r.body["chunks"];
    for (const auto& c : chunks) {
      const int attempt = c["attempt"].get<int>();
      if (attempt != last_attempt && s.output == OutputFormat::kTable) {
        s.out << "--- attempt " << attempt << " ---\n";
        last_attempt = attempt;
      }
      if (s.output == OutputFormat::kJson) {
        s.out << c.dump() << "\n";
      } else {
        s.out << c["data"].get<std::string>();
      }
    }
    s.out.flush();
    after = r.body["next"].get<std::int64_t>();
    if (!chunks.empty()) continue;  // drain before deciding to stop or wait
    if (!follow) return Status::Ok();
    ASSIGN_OR_RETURN(auto job, s.client.Get(path));
    RETURN_IF_ERROR(api::ResponseStatus(job));
    if (Terminal(job.body["state"].get<std::string>())) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
}

struct CheckpointOptions {
  std::int64_t step = 0;
  double progress = 0;
  std::string uri;
  std::int64_t size_bytes = 0;
};

class Logs final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* logs = parent.add_subcommand("logs", "Print a job's output (all attempts)");
    logs->add_option("JOB", job_id_, "Job id")->required();
    logs->add_flag("-f,--follow", follow_, "Keep printing new output until the job ends");
    registrar.OnParsed(*logs, [this](Session& s) { return RunLogs(s, job_id_, follow_); });
  }

 private:
  std::int64_t job_id_ = 0;
  bool follow_ = false;
};

class Checkpoint final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* ckpt = parent.add_subcommand(
        "checkpoint", "Inside a job: report a checkpoint whose data is already written and synced");
    CheckpointOptions& o = options_;
    ckpt->add_option("--step", o.step, "Training step of this checkpoint")
        ->required()
        ->check(CLI::NonNegativeNumber);
    ckpt->add_option("--progress", o.progress, "Fraction of the work done, 0..1")
        ->check(CLI::Range(0.0, 1.0));
    ckpt->add_option("--uri", o.uri, "Where the checkpoint is (file:///..., s3://...)")->required();
    ckpt->add_option("--size", o.size_bytes, "Size in bytes")->check(CLI::NonNegativeNumber);
    // No scheduler call: the report goes to the worker that runs this job, which forwards it
    // under its lease (the job never holds a credential).
    registrar.OnParsedLocal(*ckpt, [this](std::ostream& out) { return Run(out); });
  }

 private:
  Status Run(std::ostream& out) const {
    const char* spool = std::getenv("FRUGAL_CHECKPOINT_SPOOL");
    if (spool == nullptr || *spool == '\0') {
      return FailedPrecondition(
          "FRUGAL_CHECKPOINT_SPOOL is not set: run 'frugal checkpoint' inside a job started "
          "by frugal-worker");
    }
    const char* secret = std::getenv("FRUGAL_CHECKPOINT_SECRET");
    const CheckpointOptions& o = options_;
    RETURN_IF_ERROR(protocol::WriteCheckpointReport(
        spool, {o.step, o.progress, o.uri, o.size_bytes, secret == nullptr ? "" : secret}));
    out << "checkpoint step " << o.step << " handed to the worker\n";
    return Status::Ok();
  }

  CheckpointOptions options_;
};

}  // namespace

std::unique_ptr<Command> NewLogs() { return std::make_unique<Logs>(); }
std::unique_ptr<Command> NewCheckpoint() { return std::make_unique<Checkpoint>(); }

}  // namespace frugal::cli
