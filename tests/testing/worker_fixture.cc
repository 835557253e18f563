#include "tests/testing/worker_fixture.h"

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace frugal::testing {

namespace {

// Process groups led by direct children of `parent` (each job runs in its own group).
std::set<pid_t> ChildGroups(pid_t parent) {
  std::set<pid_t> groups;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    // Fields after the command (which may hold spaces) start after the last ')'.
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid, pgrp;
    rest >> state >> ppid >> pgrp;
    if (ppid == parent) groups.insert(pgrp);
  }
  return groups;
}

}  // namespace

WorkerProcess::WorkerProcess(WorkerOptions o) : options_(std::move(o)) {
  std::filesystem::create_directories(options_.dir);
  EnvOverrides env = options_.env;
  env["FRUGAL_WORKER_TOKEN"] = options_.token;
  std::vector<std::string> argv = {FRUGAL_WORKER_BIN,
                                   "--url", options_.url,
                                   "--pool", options_.pool,
                                   "--node", options_.node,
                                   "--gpus", std::to_string(options_.gpus),
                                   "--gpu-type", options_.gpu_type,
                                   "--gpu-mem-gb", std::to_string(options_.gpu_mem_gb),
                                   "--work-dir", options_.dir + "/work",
                                   "--checkpoint-root", options_.checkpoint_root,
                                   "--grace", options_.grace,
                                   "--notice-file", options_.dir + "/notice"};
  if (!options_.nvidia_smi.empty()) {
    argv.push_back("--nvidia-smi");
    argv.push_back(options_.nvidia_smi);
  }
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  child_ = std::make_unique<ChildProcess>(argv, env, options_.dir + "/worker");
}

WorkerProcess::~WorkerProcess() { Crash(); }

void WorkerProcess::Notice() { std::ofstream(options_.dir + "/notice") << "terminate\n"; }

void WorkerProcess::WithdrawNotice() { std::filesystem::remove(options_.dir + "/notice"); }

void WorkerProcess::Crash() {
  if (child_->Wait(std::chrono::milliseconds(0))) return;
  // Groups first: once the worker is gone its children are re-parented and lost to us.
  kill(child_->pid(), SIGSTOP);
  for (pid_t g : ChildGroups(child_->pid())) kill(-g, SIGKILL);
  child_->Signal(SIGKILL);
  child_->Wait(std::chrono::seconds(10));
}

int WorkerProcess::Stop() {
  child_->Signal(SIGTERM);
  auto code = child_->Wait(std::chrono::seconds(60));
  if (!code) {
    Crash();
    return -999;
  }
  return *code;
}

}  // namespace frugal::testing
