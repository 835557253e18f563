// `frugal logs` (read a job's output, optionally following it) and `frugal checkpoint`
// (run inside a job: hand a committed-on-disk checkpoint to the local worker).
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdlib>
#include <ostream>
#include <thread>

#include "cli/commands.h"
#include "scheduler/model/job.h"
#include "protocol/spool.h"

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

}  // namespace

void Commands::AddJobIo(CLI::App& app) {
  CLI::App* logs = app.add_subcommand("logs", "Print a job's output (all attempts)");
  logs->add_option("JOB", job_id_, "Job id")->required();
  logs->add_flag("-f,--follow", follow_, "Keep printing new output until the job ends");
  OnParsed(*logs, [this](Session& s) { return RunLogs(s, job_id_, follow_); });

  CLI::App* ckpt = app.add_subcommand(
      "checkpoint",
      "Inside a job: report a checkpoint whose data is already written and synced");
  ckpt->add_option("--step", checkpoint_.step, "Training step of this checkpoint")
      ->required()
      ->check(CLI::NonNegativeNumber);
  ckpt->add_option("--progress", checkpoint_.progress, "Fraction of the work done, 0..1")
      ->check(CLI::Range(0.0, 1.0));
  ckpt->add_option("--uri", checkpoint_.uri, "Where the checkpoint is (file:///..., s3://...)")
      ->required();
  ckpt->add_option("--size", checkpoint_.size_bytes, "Size in bytes")->check(CLI::NonNegativeNumber);
  // No scheduler call: the report goes to the worker that runs this job, which forwards it
  // under its lease (the job never holds a credential).
  ckpt->callback([this] {
    local_action_ = [this](std::ostream& out) -> Status {
      const char* spool = std::getenv("FRUGAL_CHECKPOINT_SPOOL");
      if (spool == nullptr || *spool == '\0') {
        return FailedPrecondition(
            "FRUGAL_CHECKPOINT_SPOOL is not set: run 'frugal checkpoint' inside a job started "
            "by frugal-worker");
      }
      const char* secret = std::getenv("FRUGAL_CHECKPOINT_SECRET");
      RETURN_IF_ERROR(protocol::WriteCheckpointReport(
          spool, {checkpoint_.step, checkpoint_.progress, checkpoint_.uri, checkpoint_.size_bytes,
                  secret == nullptr ? "" : secret}));
      out << "checkpoint step " << checkpoint_.step << " handed to the worker\n";
      return Status::Ok();
    };
  });
}

}  // namespace frugal::cli
