#include "tests/testing/local_fleet.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/pool_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {

using nlohmann::json;

LocalFleet::LocalFleet(const std::string& spot_workers) {
  const std::string config = dir_.path() + "/scheduler.yaml";
  std::ofstream(config) << "lease_ttl: 3s\nheartbeat_interval: 1s\ncycle_interval: 1s\n"
                           "local_workers:\n"
                           "  - {pool: od, gpus_per_node: 2, restart_delay: 1s}\n"
                           "  - {pool: spot, gpus_per_node: 2, restart_delay: 1s, grace: 2s, "
                        << spot_workers << "}\n";
  SchedulerProcess::Options o;
  o.extra_args = {"--config", config};
  sched_ = std::make_unique<SchedulerProcess>(o);
  ok_ = CreatePool(*sched_, PoolBody("od", "on_demand", "3.60", 8)) &&
        CreatePool(*sched_, PoolBody("spot", "spot", "0.90", 8));
  EXPECT_TRUE(ok_) << "could not create the od and spot pools";
}

std::int64_t LocalFleet::SubmitTrain(const std::string& token, int steps) {
  json body = {{"command", {"bash", FRUGAL_TRAIN_SH}},
               {"env", {{"TRAIN_STEPS", std::to_string(steps)}, {"CHECKPOINT_EVERY", "5"},
                        {"STEP_SECONDS", "0.1"}, {"FRUGAL_CLI", FRUGAL_CLI_BIN}}},
               {"tolerance", "checkpointed"}};
  auto r = sched_->Call("POST", "/v1/jobs", token, body.dump());
  EXPECT_EQ(r.status, 201) << r.raw;
  return r.status == 201 ? r.body["id"].get<std::int64_t>() : 0;
}

std::int64_t LocalFleet::ReclaimSpotUnderACheckpointedJob(const std::vector<std::int64_t>& jobs) {
  std::int64_t victim = 0;
  WaitFor([&] {
    for (auto id : jobs) {
      json j = sched_->Call("GET", "/v1/jobs/" + std::to_string(id), sched_->admin_token()).body;
      if (j["state"] == "running" && !j["latest_checkpoint"].is_null() &&
          j["attempt_history"].back()["pool"] == "spot") {
        std::ofstream(sched_->state_dir() + "/local/" +
                      j["attempt_history"].back()["node"].get<std::string>() + "/notice")
            << "test\n";
        victim = id;
        return true;
      }
    }
    return false;
  }, std::chrono::seconds(30));
  return victim;
}

bool LocalFleet::AllSucceed(const std::vector<std::int64_t>& jobs, std::chrono::seconds timeout) {
  return WaitFor([&] {
    for (auto id : jobs) {
      auto j = sched_->Call("GET", "/v1/jobs/" + std::to_string(id), sched_->admin_token()).body;
      if (j["state"] != "succeeded") return false;
    }
    return true;
  }, timeout);
}

}  // namespace frugal::testing
