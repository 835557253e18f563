// Multi-node gangs end to end (decision 0032): `frugal submit --nodes 2` on the local
// provider's real workers, running tests/testing/gang_toy.cc: rank 0 listens on
// MASTER_PORT, rank 1 connects to MASTER_ADDR, and they exchange a step counter. A reclaim
// notice on one node stops the whole gang; it requeues and resumes, again whole, from rank
// 0's checkpoint. Real scheduler, workers, CLI and child processes.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/process.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class GangE2eTest : public ::testing::Test {
 protected:
  void Start(const std::string& yaml) {
    const std::string config = dir_.path() + "/scheduler.yaml";
    std::ofstream(config) << "lease_ttl: 3s\nheartbeat_interval: 1s\ncycle_interval: 1s\n" << yaml;
    SchedulerProcess::Options o;
    o.extra_args = {"--config", config};
    sched_ = std::make_unique<SchedulerProcess>(o);
    user_ = sched_->NewToken("vision", "alice");
  }

  json Job(std::int64_t id) { return sched_->Job(id, user_); }

  std::string Logs(std::int64_t id) { return sched_->JobLogs(id, user_); }

  // Through the CLI, as a user would: --nodes and --gpus-per-node.
  // The toy: `steps` steps of 200 ms, rank 0 checkpointing every 5.
  std::int64_t SubmitGang(int nodes, int steps) {
    auto r = RunCommand({FRUGAL_CLI_BIN, "submit", "--output", "json", "--nodes",
                         std::to_string(nodes), "--gpus-per-node", "1", "--env",
                         std::string("FRUGAL_CLI=") + FRUGAL_CLI_BIN, "--tolerance",
                         "checkpointed", "--", FRUGAL_GANG_TOY_BIN, std::to_string(steps), "200"},
                        sched_->CliEnv(user_));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    const std::int64_t id = j.is_object() ? j.value("id", std::int64_t{0}) : 0;
    acknowledged_.push_back(id);
    return id;
  }

  // The node each rank of attempt `number` ran on.
  std::map<int, std::string> NodesOf(const json& job, int number) {
    std::map<int, std::string> out;
    for (const auto& a : job["attempt_history"])
      if (a["number"] == number) out[a["rank"].get<int>()] = a["node"].get<std::string>();
    return out;
  }

  void ExpectInvariants() {
    const std::string conninfo =
        "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
    for (const auto& p : CheckInvariants(conninfo, acknowledged_)) ADD_FAILURE() << p;
  }

  TempDir dir_{"frugal-gang"};
  std::unique_ptr<SchedulerProcess> sched_;
  std::string user_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(GangE2eTest, AGangStartsWholeAndAReclaimOfOneNodeRequeuesAndResumesItWhole) {
  Start("local_workers:\n"
        "  - {pool: spot, nodes: 2, grace: 3s, restart_delay: 1s}\n"
        "  - {pool: ondemand, nodes: 2, restart_delay: 1s}\n");
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.00", 8)));
  auto job = SubmitGang(2, 60);  // 12 s of steps
  // Running on both spot nodes, with a checkpoint from rank 0.
  ASSERT_TRUE(WaitFor([&] { return Job(job)["latest_checkpoint"].is_object(); },
                      std::chrono::seconds(60)))
      << Job(job).dump(2) << Logs(job);
  const auto first = NodesOf(Job(job), 1);
  ASSERT_EQ(first.size(), 2u) << Job(job).dump(2);
  EXPECT_NE(first.at(0), first.at(1));
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("ondemand", "on_demand", "2.00", 8)));
  // The cloud reclaims rank 0's node, with notice: rank 0 checkpoints and stops, rank 1
  // loses its peer, and the gang requeues as a whole. A cloud's reclaimed instance never
  // comes back, but a local node does, under its name, a second later: drained first, it
  // takes nothing new, so the gang resumes whole on two other nodes (the on-demand ones).
  ASSERT_EQ(sched_->Call("POST", "/v1/admin/nodes/" + first.at(0) + "/drain",
                         sched_->admin_token())
                .status,
            200);
  std::ofstream(sched_->state_dir() + "/local/" + first.at(0) + "/notice") << "reclaim\n";
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "succeeded"; }, std::chrono::seconds(150)))
      << Job(job).dump(2) << Logs(job);

  const json j = Job(job);
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["gpus"], 2);
  const int last = j["attempt_history"].back()["number"].get<int>();
  ASSERT_GE(last, 2) << j.dump(2);
  for (const auto& a : j["attempt_history"]) {
    const int n = a["number"].get<int>();
    if (n == 1 && a["rank"] == 0) EXPECT_EQ(a["end_reason"], "preempted") << a.dump();
    if (n == last) EXPECT_EQ(a["end_reason"], "succeeded") << a.dump();
  }
  for (int n = 1; n <= last; ++n) {
    const auto nodes = NodesOf(j, n);
    ASSERT_EQ(nodes.size(), 2u) << "attempt " << n << ": both ranks, together";
    EXPECT_NE(nodes.at(0), nodes.at(1)) << "attempt " << n;
  }
  for (const auto& [rank, node] : NodesOf(j, last))
    EXPECT_TRUE(node != first.at(0) && node != first.at(1))
        << "resumed on " << node << ", a node of the first attempt";
  // The reclaim was no failure of the job's: rank 1's crash when its peer went is explained
  // by rank 0's reclaim, so the gang requeued as preempted, not as a failure to retry.
  std::string moves;
  for (const auto& e : j["events"]) moves += e["message"].get<std::string>() + "\n";
  EXPECT_NE(moves.find("preempted on " + first.at(0)), std::string::npos) << moves;
  EXPECT_EQ(moves.find("failed on"), std::string::npos) << moves;
  const std::string logs = Logs(job);
  EXPECT_NE(logs.find("rank 0 of 2: met at"), std::string::npos) << logs;
  EXPECT_NE(logs.find("rank 1 of 2: met at"), std::string::npos) << logs;
  // The last attempt resumed from rank 0's checkpoint, and both ranks finished the steps.
  const auto resumed = logs.rfind("rank 0 of 2: met at");
  ASSERT_NE(resumed, std::string::npos);
  EXPECT_EQ(logs.find("starting at step 0", resumed), logs.npos) << logs.substr(resumed);
  EXPECT_NE(logs.find("rank 0: exchanged steps", resumed), std::string::npos) << logs;
  EXPECT_NE(logs.find("rank 1: exchanged steps"), std::string::npos) << logs;
  EXPECT_NE(logs.find("..60"), std::string::npos) << logs;
  ExpectInvariants();
}

TEST_F(GangE2eTest, AGangLargerThanThePoolWaitsAndSaysWhy) {
  Start("local_workers:\n  - {pool: od, nodes: 2, restart_delay: 1s}\n");
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("od", "on_demand", "1.00", 8)));
  auto job = SubmitGang(3, 5);
  ASSERT_TRUE(WaitFor([&] { return Job(job)["reason"] != ""; }, std::chrono::seconds(20)));
  // A few cycles later it still has not started in part.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json j = Job(job);
  EXPECT_EQ(j["state"], "pending") << j.dump(2);
  EXPECT_NE(j["reason"].get<std::string>().find("it needs 3 nodes with 1 GPU(s) each"),
            std::string::npos)
      << j.dump(2);
  EXPECT_TRUE(j["attempt_history"].empty()) << j.dump(2);
  ASSERT_EQ(sched_->Call("POST", "/v1/jobs/" + std::to_string(job) + "/cancel", user_).status, 200);
  ExpectInvariants();
}

}  // namespace
}  // namespace frugal::testing
