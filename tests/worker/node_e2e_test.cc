// Nodes end to end (decision 0021): the real scheduler, real frugal-worker processes and the
// real CLI. An admin drain keeps new work off a node while its running attempt finishes and
// undrain brings it back; a worker whose GPU is not its pool's is refused at registration;
// a withdrawn spot notice makes the node ready again without a worker restart; and the
// scheduler's node_lost line names the node and its attempts.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

// Heartbeat 1 s, lease 3 s, cycle 1 s: a lost node is noticed within about 5 s.
const std::vector<std::string> kFastLeases = {"--lease-ttl", "3s", "--heartbeat-interval", "1s",
                                              "--cycle-interval", "1s"};

class NodeE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerProcess::Options options;
    options.extra_args = kFastLeases;
    sched_ = std::make_unique<SchedulerProcess>(options);
    admin_ = sched_->admin_token();
    worker_token_ = sched_->NewToken("infra", "workers", "worker");
    user_token_ = sched_->NewToken("vision", "alice");
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.10", 64)));
  }

  std::unique_ptr<WorkerProcess> StartWorker(const std::string& node, WorkerOptions o = {}) {
    o.url = sched_->url();
    o.token = worker_token_;
    o.pool = "spot";
    o.node = node;
    o.dir = dir_.path() + "/" + node;
    o.checkpoint_root = dir_.path() + "/checkpoints";
    o.grace = "5s";
    return std::make_unique<WorkerProcess>(o);
  }

  // A job that sleeps `seconds` and succeeds.
  std::int64_t Submit(const std::string& seconds) {
    json body = {{"command", {"sleep", seconds}}, {"max_attempts", 1}};
    auto r = sched_->Call("POST", "/v1/jobs", user_token_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body.value("id", std::int64_t{0}));
    return acknowledged_.back();
  }

  json Job(std::int64_t id) {
    return sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_token_).body;
  }
  std::string JobState(std::int64_t id) {
    json j = Job(id);
    return j.is_object() ? j.value("state", "") : "";
  }

  // The node as `frugal admin node list -o json` shows it (null if not listed).
  json Node(const std::string& name) {
    auto r = Cli({"admin", "node", "list", "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json list = json::parse(r.out, nullptr, false);
    if (!list.is_object()) return nullptr;
    for (const auto& n : list["nodes"]) {
      if (n["name"] == name) return n;
    }
    return nullptr;
  }
  std::string NodeState(const std::string& name) {
    json n = Node(name);
    return n.is_object() ? n["state"].get<std::string>() : "";
  }

  CommandResult Cli(std::vector<std::string> args) {
    args.insert(args.begin(), FRUGAL_CLI_BIN);
    return RunCommand(args, sched_->CliEnv(admin_));
  }

  std::string SchedulerLog() { return sched_->process().Stdout() + sched_->process().Stderr(); }

  std::string Conninfo() const {
    return "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
  }

  TempDir dir_{"frugal-node-e2e"};
  std::unique_ptr<SchedulerProcess> sched_;
  std::string admin_, worker_token_, user_token_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(NodeE2eTest, DrainedNodeRunsItsWorkButTakesNoNewWorkUntilUndrained) {
  auto w = StartWorker("node-a");
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-a") == "ready"; }, std::chrono::seconds(30)))
      << w->process().Stderr();
  // a. A job runs on node-a; then node-a is drained with the CLI.
  const auto running = Submit("4");
  ASSERT_TRUE(WaitFor([&] { return JobState(running) == "running"; }, std::chrono::seconds(30)));
  auto drain = Cli({"admin", "node", "drain", "node-a"});
  ASSERT_EQ(drain.exit_code, 0) << drain.err;
  EXPECT_NE(drain.out.find("Node node-a: draining (admin), 1 running attempt(s)."),
            std::string::npos)
      << drain.out;
  // b. Its running job finishes there; a job submitted now waits (4 cycles of 1 s after
  //    the first job ended, with node-a's 1 GPU free).
  const auto waiting = Submit("1");
  ASSERT_TRUE(WaitFor([&] { return JobState(running) == "succeeded"; }, std::chrono::seconds(30)))
      << Job(running).dump(2);
  std::this_thread::sleep_for(std::chrono::seconds(4));
  EXPECT_EQ(JobState(waiting), "pending") << Job(waiting).dump(2);
  json n = Node("node-a");
  EXPECT_EQ(n["state"], "draining") << n.dump(2);
  EXPECT_EQ(n["drain"], "admin");
  EXPECT_EQ(n["running_attempts"], 0);
  auto table = Cli({"admin", "node", "list"});
  EXPECT_NE(table.out.find("draining (admin)"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("1 x a100 80 GB"), std::string::npos) << table.out;
  // c. Undrained: the waiting job runs on node-a.
  auto undrain = Cli({"admin", "node", "undrain", "node-a"});
  ASSERT_EQ(undrain.exit_code, 0) << undrain.err;
  ASSERT_TRUE(WaitFor([&] { return JobState(waiting) == "succeeded"; }, std::chrono::seconds(30)))
      << Job(waiting).dump(2);
  EXPECT_EQ(Job(waiting)["attempt_history"][0]["node"], "node-a");
  // d. Both changes are in the audit log.
  auto audit = Cli({"admin", "audit", "-o", "json"});
  EXPECT_NE(audit.out.find("node.drain"), std::string::npos) << audit.out;
  EXPECT_NE(audit.out.find("node.undrain"), std::string::npos) << audit.out;
  for (const auto& p : CheckInvariants(Conninfo(), acknowledged_)) ADD_FAILURE() << p;
}

TEST_F(NodeE2eTest, RemoveIsRefusedForALiveUndrainedNode) {
  auto w = StartWorker("node-r");
  ASSERT_TRUE(WaitFor([&] { return NodeState("node-r") == "ready"; }, std::chrono::seconds(30)));
  auto refused = Cli({"admin", "node", "remove", "node-r"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("drain it first"), std::string::npos) << refused.err;
  auto r = sched_->Call("POST", "/v1/admin/nodes/node-r/remove", admin_);
  EXPECT_EQ(r.status, 409) << r.raw;
  // Researchers may not even list nodes.
  EXPECT_EQ(sched_->Call("GET", "/v1/admin/nodes", user_token_).status, 403);
}

TEST_F(NodeE2eTest, WorkerWithAnotherGpuThanItsPoolIsRefusedNamingBoth) {
  WorkerOptions t4;
  t4.gpu_type = "t4";
  t4.gpu_mem_gb = 16;
  auto w = StartWorker("t4-node", t4);
  auto code = w->process().Wait(std::chrono::seconds(30));
  ASSERT_TRUE(code.has_value()) << "the worker kept running: " << w->process().Stderr();
  EXPECT_NE(*code, 0);
  const std::string err = w->process().Stdout() + w->process().Stderr();
  EXPECT_NE(err.find("node gpu t4 16 GB does not match pool spot (a100, 80 GB)"),
            std::string::npos)
      << err;
  EXPECT_TRUE(Node("t4-node").is_null());
  // The API answers 422 naming the field.
  json reg = {{"node", "t4-direct"}, {"pool", "spot"}, {"gpus", 1}, {"gpu_type", "t4"},
              {"gpu_mem_gb", 16}};
  auto r = sched_->Call("POST", "/v1/workers/register", worker_token_, reg.dump());
  EXPECT_EQ(r.status, 422) << r.raw;
  EXPECT_EQ(r.body["error"]["field"], "gpu_type") << r.raw;
}

TEST_F(NodeE2eTest, WithdrawnNoticeReturnsTheNodeToReadyWithoutARestart) {
  auto w = StartWorker("spot-n");
  ASSERT_TRUE(WaitFor([&] { return NodeState("spot-n") == "ready"; }, std::chrono::seconds(30)));
  // a. A notice drains it: a job submitted now waits.
  w->Notice();
  ASSERT_TRUE(WaitFor([&] { return Node("spot-n").value("drain", json()) == "notice"; },
                      std::chrono::seconds(30)))
      << Node("spot-n").dump(2) << w->process().Stderr();
  const auto job = Submit("1");
  std::this_thread::sleep_for(std::chrono::seconds(3));
  EXPECT_EQ(JobState(job), "pending");
  // b. The notice file goes away: the same worker process takes the job.
  w->WithdrawNotice();
  ASSERT_TRUE(WaitFor([&] { return NodeState("spot-n") == "ready"; }, std::chrono::seconds(30)))
      << Node("spot-n").dump(2) << w->process().Stderr();
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "succeeded"; }, std::chrono::seconds(30)))
      << Job(job).dump(2) << w->process().Stderr();
  EXPECT_FALSE(w->process().Wait(std::chrono::milliseconds(0)).has_value());
  EXPECT_NE(w->process().Stderr().find("notice_withdrawn"), std::string::npos)
      << w->process().Stderr();
  EXPECT_NE(SchedulerLog().find(R"("event":"notice_withdrawn","node":"spot-n")"), std::string::npos);
}

TEST_F(NodeE2eTest, NodeLostLineNamesTheNodeAndItsAttempts) {
  auto w = StartWorker("node-x");
  const auto job = Submit("60");
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "running"; }, std::chrono::seconds(30)));
  const auto attempt = Job(job)["attempt_history"][0]["id"].get<std::int64_t>();
  w->Crash();
  const std::string want = R"("event":"node_lost","node":"node-x","attempts":[)" +
                           std::to_string(attempt) + R"(],"jobs":[)" + std::to_string(job) + "]";
  ASSERT_TRUE(WaitFor([&] { return SchedulerLog().find(want) != std::string::npos; },
                      std::chrono::seconds(30)))
      << want << "\n" << SchedulerLog();
  EXPECT_EQ(NodeState("node-x"), "lost");
  // A lost node can be removed; its job was already requeued by the sweep.
  auto removed = Cli({"admin", "node", "remove", "node-x"});
  EXPECT_EQ(removed.exit_code, 0) << removed.err;
  EXPECT_TRUE(Node("node-x").is_null());
}

}  // namespace
}  // namespace frugal::testing
