// A scheduler whose local provider runs the workers: an on-demand pool "od" ($3.60 per
// GPU-hour) and a spot pool "spot" ($0.90), 2 GPUs a node, short leases and cycles, so that
// jobs of examples/train.sh really run, checkpoint and get reclaimed. For the end-to-end
// tests of what the ledger and its views say about such runs.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"

namespace frugal::testing {

class LocalFleet {
 public:
  // `spot_workers`: the spot entry's extra local_workers keys, e.g. "nodes: 2" (two fixed
  // nodes) or "max_nodes: 2" (grows on request).
  explicit LocalFleet(const std::string& spot_workers);

  SchedulerProcess& sched() { return *sched_; }
  // False (with a test failure) if the pools could not be created.
  bool ok() const { return ok_; }

  // Submits examples/train.sh with `steps` steps of 0.1 s, a checkpoint every 5, as a
  // checkpointed job; its id, or 0 (with a test failure).
  std::int64_t SubmitTrain(const std::string& token, int steps);
  // Writes a reclaim notice on the spot node under the first of `jobs` that runs there with
  // a checkpoint, waiting up to 30 s for one; the job's id, or 0.
  std::int64_t ReclaimSpotUnderACheckpointedJob(const std::vector<std::int64_t>& jobs);
  // Whether every one of `jobs` succeeded within `timeout`.
  bool AllSucceed(const std::vector<std::int64_t>& jobs, std::chrono::seconds timeout);

 private:
  TempDir dir_{"frugal-local-cluster"};
  std::unique_ptr<SchedulerProcess> sched_;
  bool ok_ = false;
};

}  // namespace frugal::testing
