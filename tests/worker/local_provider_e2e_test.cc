// The local provider end to end: frugal-scheduler starts its own frugal-worker processes
// from `local_workers` in its config and plays the cloud for spot pools, with interruptions
// replayed from a trace or drawn at a rate; no paid node for a job a hard budget holds.
// Real scheduler, workers and examples/train.sh.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

class LocalProviderE2eTest : public ::testing::Test {
 protected:
  void Start(const std::string& yaml) {
    const std::string config = dir_.path() + "/scheduler.yaml";
    std::ofstream(config) << "lease_ttl: 3s\nheartbeat_interval: 1s\ncycle_interval: 1s\n" << yaml;
    SchedulerProcess::Options o;
    o.extra_args = {"--config", config};
    sched_ = std::make_unique<SchedulerProcess>(o);
    user_ = sched_->NewToken("vision", "alice");
  }

  void Pool(const std::string& name, const std::string& kind, const std::string& gpu_type) {
    ASSERT_TRUE(CreatePool(*sched_, PoolBody(name, kind, "1.00", 8, {{"gpu_type", gpu_type}})));
  }

  std::int64_t SubmitTrain(int steps, const std::string& step_seconds, int every) {
    json body = {{"command", {"bash", FRUGAL_TRAIN_SH}},
                 {"env", {{"TRAIN_STEPS", std::to_string(steps)},
                          {"CHECKPOINT_EVERY", std::to_string(every)},
                          {"STEP_SECONDS", step_seconds},
                          {"FRUGAL_CLI", FRUGAL_CLI_BIN}}},
                 {"gpu_types", {"a100", "v100"}},
                 {"tolerance", "checkpointed"},
                 {"max_attempts", 1}};  // preemptions must not use attempts up
    auto r = sched_->Call("POST", "/v1/jobs", user_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body.value("id", std::int64_t{0}));
    return acknowledged_.back();
  }

  json Job(std::int64_t id) { return sched_->Job(id, user_); }

  std::string Logs(std::int64_t id) { return sched_->JobLogs(id, user_); }

  bool NodeDirExists(const std::string& node) const {
    return fs::exists(fs::path(sched_->state_dir()) / "local" / node);
  }

  void ExpectInvariants() {
    const std::string conninfo =
        "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
    for (const auto& p : CheckInvariants(conninfo, acknowledged_)) ADD_FAILURE() << p;
  }

  TempDir dir_{"frugal-local-provider"};
  std::unique_ptr<SchedulerProcess> sched_;
  std::string user_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(LocalProviderE2eTest, TraceReplayReclaimsSpotAndTheJobFinishesOnDemand) {
  // Spot is available for the first 15 s of the series, then not until t = 10000 s.
  const std::string trace = dir_.path() + "/trace.csv";
  std::ofstream(trace) << "zone,tick,elapsed_s,timestamp_utc,available,spot_usd_hr\n"
                       << "z1,0,0,,1,0.9\nz1,1,15,,0,0.9\nz1,2,10000,,1,0.9\n";
  Start("local_workers:\n"
        "  - {pool: spot, gpu_type: v100, grace: 3s, restart_delay: 1s,\n"
        "     preemption: {trace: " + trace + ", zone: z1, speedup: 1}}\n"
        "  - {pool: ondemand, gpu_type: a100, restart_delay: 1s}\n");
  // Only the spot pool exists at first, so the job starts there.
  Pool("spot", "spot", "v100");
  auto job = SubmitTrain(150, "0.15", 5);  // 22 s of work: still running at t = 15 s
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "running"; }, std::chrono::seconds(30)))
      << Job(job).dump(2) << sched_->process().Stderr();
  Pool("ondemand", "on_demand", "a100");  // its local worker joins within restart_delay
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "succeeded"; }, std::chrono::seconds(120)))
      << Job(job).dump(2) << sched_->process().Stderr();
  json j = Job(job);
  ASSERT_GE(j["attempt_history"].size(), 2u) << j.dump(2);
  EXPECT_EQ(j["attempt_history"][0]["node"], "spot-1");
  EXPECT_EQ(j["attempt_history"][0]["end_reason"], "preempted");
  EXPECT_EQ(j["attempt_history"].back()["node"], "ondemand-1");
  EXPECT_NE(Logs(job).find("resumed from "), std::string::npos) << Logs(job);
  // The trace has no spot until t = 10000 s: no replacement spot node was started.
  EXPECT_FALSE(NodeDirExists("spot-1-g2"));
  EXPECT_NE(sched_->process().Stderr().find("local_node_preempted"), std::string::npos);
  ExpectInvariants();
}

TEST_F(LocalProviderE2eTest, RatePreemptionsReplaceNodesAndJobsStillFinish) {
  // One notice per 5 node-seconds on average: within 60 s a node is all but certainly
  // (1 - e^-24) reclaimed and replaced by a new instance with a new name.
  Start("local_workers:\n"
        "  - {pool: spot, nodes: 2, grace: 2s, restart_delay: 1s,\n"
        "     preemption: {rate_per_node_hour: 720, seed: 5}}\n");
  Pool("spot", "spot", "a100");
  auto job = SubmitTrain(30, "0.1", 3);
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "succeeded"; }, std::chrono::seconds(150)))
      << Job(job).dump(2) << sched_->process().Stderr();
  EXPECT_TRUE(WaitFor([&] { return NodeDirExists("spot-1-g2") || NodeDirExists("spot-2-g2"); },
                      std::chrono::seconds(60)));
  for (const auto& a : Job(job)["attempt_history"])
    EXPECT_TRUE(a["end_reason"] == "preempted" || a["end_reason"] == "succeeded") << a.dump();
  ExpectInvariants();
}

TEST_F(LocalProviderE2eTest, ElasticPoolGrowsOnDemandAndReleasesIdleNodes) {
  // No node at first; the policy asks for one when a job needs it, and gives it back after
  // the pool's idle timeout.
  Start("local_workers:\n"
        "  - {pool: burst, nodes: 0, max_nodes: 2, restart_delay: 1s}\n");
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("burst", "on_demand", "2.00", 2,
                                            {{"idle_timeout_seconds", 3}})));
  EXPECT_FALSE(NodeDirExists("burst-1"));
  auto job = SubmitTrain(10, "0.1", 5);
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "succeeded"; }, std::chrono::seconds(60)))
      << Job(job).dump(2) << sched_->process().Stderr();
  EXPECT_EQ(Job(job)["attempt_history"][0]["node"], "burst-1");
  EXPECT_FALSE(NodeDirExists("burst-2"));  // one GPU was asked for, one node started
  EXPECT_NE(sched_->process().Stderr().find("local_node_requested"), std::string::npos);
  // Idle for 3 s: released, and its worker stops.
  EXPECT_TRUE(WaitFor([&] {
    return sched_->process().Stderr().find("local_node_released") != std::string::npos;
  }, std::chrono::seconds(30))) << sched_->process().Stderr();
  ExpectInvariants();
}

TEST_F(LocalProviderE2eTest, NoPaidNodeStartsForAJobTheHardBudgetHolds) {
  // An elastic on-demand pool with no node at $2.00/GPU-hour and a $3.00 hard budget: each
  // 1-hour job expects $2.00, so each fits alone but not both (decision 0016).
  Start("local_workers:\n"
        "  - {pool: burst, nodes: 0, max_nodes: 2, restart_delay: 1s}\n");
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("burst", "on_demand", "2.00", 2)));
  auto budget = sched_->Call("POST", "/v1/admin/teams/vision/budget", sched_->admin_token(),
                             R"({"period":"monthly","limit":"3","alert_at_pct":[90],"hard":true})");
  ASSERT_EQ(budget.status, 200) << budget.raw;
  for (int i = 0; i < 2; ++i) {
    auto r = sched_->Call("POST", "/v1/jobs", user_,
                          json{{"command", {"sleep", "600"}}, {"estimate_seconds", 3600}}.dump());
    ASSERT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body["id"].get<std::int64_t>());
  }
  // a. One job runs on the one node started for it; the other waits on the budget.
  auto running = [&](std::int64_t id) { return Job(id)["state"] == "running"; };
  auto held = [&](std::int64_t id) {
    const json j = Job(id);
    return j["state"] == "pending" && j["reason"].is_string() &&
           j["reason"].get<std::string>().find("over budget") != std::string::npos;
  };
  ASSERT_TRUE(WaitFor([&] {
    const auto a = acknowledged_[0], b = acknowledged_[1];
    return (running(a) && held(b)) || (running(b) && held(a));
  }, std::chrono::seconds(60))) << Job(acknowledged_[0]).dump(2) << Job(acknowledged_[1]).dump(2)
                                << sched_->process().Stderr();
  // b. Only one node was ever asked for: none for the held job (it could not have used it).
  const std::string log = sched_->process().Stderr();
  int requests = 0;
  for (size_t at = log.find("local_node_requested"); at != std::string::npos;
       at = log.find("local_node_requested", at + 1))
    ++requests;
  EXPECT_EQ(requests, 1) << log;
  EXPECT_FALSE(NodeDirExists("burst-2"));
  for (auto id : acknowledged_) {
    EXPECT_EQ(sched_->Call("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", user_).status,
              200);
    EXPECT_TRUE(WaitFor([&] { return Job(id)["state"] == "cancelled"; }, std::chrono::seconds(60)))
        << Job(id).dump(2);
  }
  ExpectInvariants();
}

}  // namespace
}  // namespace frugal::testing
