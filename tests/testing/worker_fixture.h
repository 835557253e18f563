// A real frugal-worker process for end-to-end tests, with pretend GPUs, its own work
// directory, a notice file the test can create to simulate a spot interruption, and a
// way to die like a crashed node (the worker and every job it started, SIGKILLed).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tests/testing/process.h"

namespace frugal::testing {

struct WorkerOptions {
  std::string url;
  std::string token;
  std::string pool;
  std::string node;
  int gpus = 1;
  std::string gpu_type = "a100";
  int gpu_mem_gb = 80;
  std::string dir;              // work dir, logs and the notice file live here
  std::string checkpoint_root;  // shared by all workers of a test
  std::string grace = "5s";
  EnvOverrides env;             // e.g. FRUGAL_CLI for examples/train.sh
  std::string nvidia_smi;       // set: the worker's GPU metrics command (a test script)
  std::vector<std::string> extra_args;  // more flags, e.g. --noop
};

class WorkerProcess {
 public:
  explicit WorkerProcess(WorkerOptions options);
  ~WorkerProcess();

  // Creates the notice file: the worker sees a spot interruption notice.
  void Notice();
  // Removes the notice file: the notice is withdrawn (the node was not reclaimed).
  void WithdrawNotice();
  // SIGKILL the worker and every process group it started: a node that vanished.
  void Crash();
  // SIGTERM and wait; returns the exit code.
  int Stop();
  ChildProcess& process() { return *child_; }
  const WorkerOptions& options() const { return options_; }

 private:
  WorkerOptions options_;
  std::unique_ptr<ChildProcess> child_;
};

}  // namespace frugal::testing
