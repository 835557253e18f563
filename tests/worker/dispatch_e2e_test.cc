// Dispatch without waiting for a heartbeat (decision 0027), end to end: the real scheduler,
// real frugal-worker processes, real HTTP. Heartbeats are 30 s apart here, so anything
// that reaches a worker within seconds came through POST /v1/workers/wait; without it,
// each step below would wait for the next heartbeat (about 30 s) and miss its bound.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <thread>

#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using std::chrono::seconds;

// Leases long enough that no heartbeat is due during a step; cycles only when kicked.
const std::vector<std::string> kSlowBeats = {"--lease-ttl", "120s", "--heartbeat-interval",
                                             "30s", "--cycle-interval", "30s",
                                             "--leader-lease-ttl", "60s"};

class DispatchE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerProcess::Options o;
    o.extra_args = kSlowBeats;
    sched_ = std::make_unique<SchedulerProcess>(o);
    admin_ = sched_->admin_token();
    worker_token_ = sched_->NewToken("infra", "workers", "worker");
    user_token_ = sched_->NewToken("vision", "alice");
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.10", 64)));
  }

  std::unique_ptr<WorkerProcess> StartWorker(const std::string& node,
                                             std::vector<std::string> extra = {}) {
    WorkerOptions o;
    o.url = sched_->url();
    o.token = worker_token_;
    o.pool = "spot";
    o.node = node;
    o.dir = dir_.path() + "/" + node;
    o.checkpoint_root = dir_.path() + "/checkpoints";
    o.extra_args = std::move(extra);
    auto w = std::make_unique<WorkerProcess>(o);
    // Registered and past the heartbeat that follows registration: the next is 30 s away.
    EXPECT_TRUE(WaitFor([&] { return NodeReady(node); }, seconds(30))) << w->process().Stderr();
    std::this_thread::sleep_for(std::chrono::seconds(1));
    return w;
  }

  bool NodeReady(const std::string& name) {
    auto r = sched_->Call("GET", "/v1/admin/nodes", admin_);
    for (const auto& n : r.body.value("nodes", json::array())) {
      if (n["name"] == name) return n.value("state", "") == "ready";
    }
    return false;
  }

  std::int64_t Submit(const json& command) {
    json body = {{"command", command}, {"gpus", 1}};
    auto r = sched_->Call("POST", "/v1/jobs", user_token_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.body.value("id", std::int64_t{0});
  }

  std::string JobState(std::int64_t id) { return State(id); }

  std::string State(std::int64_t id) {
    auto r = sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_token_);
    return r.body.is_object() ? r.body.value("state", "") : "";
  }

  TempDir dir_{"frugal-dispatch-e2e"};
  std::unique_ptr<SchedulerProcess> sched_;
  std::string admin_, worker_token_, user_token_;
};

TEST_F(DispatchE2eTest, JobsStartAndStopBetweenHeartbeats) {
  auto w = StartWorker("node-d");
  const std::string out = dir_.path() + "/out";
  std::filesystem::create_directories(out);
  std::filesystem::permissions(out, std::filesystem::perms::all);
  // a. Three jobs one after another: each is assigned, started and finished, and the next
  // one placed, all between two heartbeats.
  for (int i = 0; i < 3; ++i) {
    const auto id = Submit({"/bin/sh", "-c", "echo ran > " + out + "/job-$FRUGAL_JOB_ID"});
    ASSERT_TRUE(WaitFor([&] { return State(id) == "succeeded"; }, seconds(10)))
        << "job " << id << " is " << State(id) << "\n" << w->process().Stderr();
    EXPECT_TRUE(std::filesystem::exists(out + "/job-" + std::to_string(id)));
  }
  // b. A cancel reaches the running job's worker at once, not at its next heartbeat.
  const auto id = Submit({"sleep", "300"});
  ASSERT_TRUE(WaitFor([&] { return State(id) == "running"; }, seconds(10))) << State(id);
  auto r = sched_->Call("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", user_token_);
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_TRUE(WaitFor([&] { return State(id) == "cancelled"; }, seconds(10)))
      << "job " << id << " is " << State(id) << "\n" << w->process().Stderr();
}

TEST_F(DispatchE2eTest, NoopWorkerReportsSuccessWithoutRunningAnything) {
  auto w = StartWorker("node-noop", {"--noop"});
  const std::string marker = dir_.path() + "/ran";
  // /bin/false would fail, and the touch would leave a file, if either ran.
  const auto a = Submit({"/bin/false"});
  const auto b = Submit({"/usr/bin/touch", marker});
  for (const auto id : {a, b}) {
    ASSERT_TRUE(WaitFor([&] { return State(id) == "succeeded"; }, seconds(10)))
        << "job " << id << " is " << State(id) << "\n" << w->process().Stderr();
  }
  EXPECT_FALSE(std::filesystem::exists(marker)) << "--noop ran a command";
  // Nor did it make what a job would run in: no uid taken, no checkpoint directory (a real
  // job's is made before it starts; decision 0035).
  for (const auto id : {a, b}) {
    EXPECT_FALSE(std::filesystem::exists(dir_.path() + "/checkpoints/" + std::to_string(id)))
        << "job " << id;
  }
}

TEST_F(DispatchE2eTest, WaitAnswersOnlyItsOwnNodeAndWakesOnAssignment) {
  // Two nodes registered through the API, with no worker behind them.
  auto reg = [&](const std::string& node) {
    json body = {{"node", node}, {"pool", "spot"}, {"gpus", 1}, {"gpu_type", "a100"},
                 {"gpu_mem_gb", 80}};
    auto r = sched_->Call("POST", "/v1/workers/register", worker_token_, body.dump());
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body.value("node_credential", std::string());
  };
  const std::string cred_a = reg("api-a"), cred_b = reg("api-b");
  auto wait = [&](const std::string& token, json body) {
    return sched_->Call("POST", "/v1/workers/wait", token, body.dump());
  };
  // Refusals: another node's credential, a researcher, bad fields, an over-long wait.
  EXPECT_EQ(wait(cred_b, {{"node", "api-a"}, {"seen", 0}, {"wait_ms", 0}}).status, 403);
  EXPECT_EQ(wait(user_token_, {{"node", "api-a"}, {"seen", 0}, {"wait_ms", 0}}).status, 403);
  EXPECT_EQ(wait("not-a-token", {{"node", "api-a"}, {"seen", 0}, {"wait_ms", 0}}).status, 401);
  auto bad = wait(cred_a, {{"node", "api-a"}, {"seen", 0}, {"wait_ms", 60000}});
  EXPECT_EQ(bad.status, 400) << bad.raw;
  EXPECT_EQ(bad.body["error"]["field"], "wait_ms") << bad.raw;
  EXPECT_EQ(wait(cred_a, {{"node", "api-a"}, {"seen", 0}, {"wait", 1}}).status, 400);
  // Nothing for this node: the wait ends unchanged when its time is up.
  auto now = wait(cred_a, {{"node", "api-a"}, {"seen", 0}, {"wait_ms", 0}});
  ASSERT_EQ(now.status, 200) << now.raw;
  const auto seen = now.body["generation"].get<std::int64_t>();
  auto idle = wait(cred_a, {{"node", "api-a"}, {"seen", seen}, {"wait_ms", 200}});
  ASSERT_EQ(idle.status, 200) << idle.raw;
  EXPECT_EQ(idle.body["changed"], false) << idle.raw;
  // A job for 2 GPUs fits neither node; one for 1 GPU goes to one of them, and that node's
  // wait answers changed (a timeout would answer unchanged after 20 s).
  auto polls = [&](const std::string& cred, const std::string& node) {
    return std::async(std::launch::async, [&, cred, node] {
      return wait(cred, {{"node", node}, {"seen", seen}, {"wait_ms", 20000}});
    });
  };
  auto poll_a = polls(cred_a, "api-a");
  auto poll_b = polls(cred_b, "api-b");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto id = Submit({"/bin/true"});
  ASSERT_TRUE(WaitFor([&] { return State(id) == "running"; }, seconds(10))) << State(id);
  const bool a_ready = poll_a.wait_for(seconds(10)) == std::future_status::ready;
  const bool b_ready = poll_b.wait_for(seconds(10)) == std::future_status::ready;
  EXPECT_TRUE(a_ready || b_ready) << "no wait answered within 10 s of the assignment";
  auto& first = a_ready ? poll_a : poll_b;
  auto answer = first.get();
  EXPECT_EQ(answer.status, 200) << answer.raw;
  EXPECT_EQ(answer.body["changed"], true) << answer.raw;
  // The answer carries the order itself, for the node's lease (decision 0038)...
  ASSERT_EQ(answer.body.value("assignments", json::array()).size(), 1u) << answer.raw;
  EXPECT_EQ(answer.body["assignments"][0]["job_id"], id) << answer.raw;
  const auto epoch = answer.body.value("lease_epoch", std::int64_t{0});
  EXPECT_GE(epoch, 1) << answer.raw;
  EXPECT_TRUE(answer.body["stop"].is_array()) << answer.raw;
  // ...and acknowledged nothing: the node's heartbeat still delivers it.
  const std::string node = a_ready ? "api-a" : "api-b";
  auto hb = sched_->Call("POST", "/v1/workers/heartbeat", a_ready ? cred_a : cred_b,
                         json({{"node", node}, {"lease_epoch", epoch}}).dump());
  ASSERT_EQ(hb.status, 200) << hb.raw;
  ASSERT_EQ(hb.body["assignments"].size(), 1u) << hb.raw;
  EXPECT_EQ(hb.body["assignments"][0]["attempt_id"], answer.body["assignments"][0]["attempt_id"]);
  // The other node got nothing: its wait runs to its end, unchanged, and carries no orders.
  auto& other = a_ready ? poll_b : poll_a;
  auto rest = other.get();
  EXPECT_EQ(rest.body["changed"], false) << rest.raw;
  EXPECT_FALSE(rest.body.contains("assignments")) << rest.raw;
}

TEST_F(DispatchE2eTest, BatchedFinishJudgesEachReportAlone) {
  json reg = {{"node", "api-f"}, {"pool", "spot"}, {"gpus", 2}, {"gpu_type", "a100"},
              {"gpu_mem_gb", 80}};
  auto r = sched_->Call("POST", "/v1/workers/register", worker_token_, reg.dump());
  ASSERT_EQ(r.status, 200) << r.raw;
  const std::string cred = r.body["node_credential"];
  const auto epoch = r.body["lease_epoch"].get<std::int64_t>();
  const auto a = Submit({"/bin/true"}), b = Submit({"/bin/true"});
  // Both land on api-f; heartbeats hand out their fences (again, until acknowledged).
  json by_job = json::object();
  ASSERT_TRUE(WaitFor(
      [&] {
        auto hb = sched_->Call("POST", "/v1/workers/heartbeat", cred,
                               json({{"node", "api-f"}, {"lease_epoch", epoch}}).dump());
        for (const auto& o : hb.body.value("assignments", json::array()))
          by_job[std::to_string(o["job_id"].get<std::int64_t>())] = o;
        return by_job.size() == 2;
      },
      seconds(10)))
      << by_job.dump();
  const json oa = by_job[std::to_string(a)], ob = by_job[std::to_string(b)];
  auto report = [&](const json& o, const std::string& fence) {
    return json({{"attempt_id", o["attempt_id"]}, {"lease_epoch", epoch}, {"fence", fence},
                 {"outcome", "succeeded"}, {"exit_code", 0}});
  };
  auto finish = [&](json reports) {
    return sched_->Call("POST", "/v1/workers/finish", cred, json({{"reports", reports}}).dump());
  };
  // Malformed batches are refused whole, naming the report and the field.
  auto bad = finish({report(oa, oa["fence"]), json({{"attempt_id", 1}, {"outcome", "won"}})});
  EXPECT_EQ(bad.status, 400) << bad.raw;
  EXPECT_EQ(bad.body["error"]["field"], "reports[1].lease_epoch") << bad.raw;
  EXPECT_EQ(finish(json::array()).status, 400);
  EXPECT_EQ(JobState(a), "running");
  // A good report with its last output, and one with a forged fence: the first stands, the
  // second is refused alone and its job keeps running.
  json good = report(oa, oa["fence"]);
  good["log"] = "hello from the batch\n";
  const std::string forged(64, 'a');
  auto mixed = finish({good, report(ob, forged)});
  ASSERT_EQ(mixed.status, 200) << mixed.raw;
  EXPECT_EQ(mixed.body["results"][0]["status"], 200) << mixed.raw;
  EXPECT_EQ(mixed.body["results"][0]["job_state"], "succeeded") << mixed.raw;
  EXPECT_EQ(mixed.body["results"][1]["status"], 409) << mixed.raw;
  EXPECT_EQ(JobState(a), "succeeded");
  EXPECT_EQ(JobState(b), "running");
  auto logs = sched_->Call("GET", "/v1/jobs/" + std::to_string(a) + "/logs", user_token_);
  ASSERT_EQ(logs.body["chunks"].size(), 1u) << logs.raw;
  EXPECT_EQ(logs.body["chunks"][0]["data"], "hello from the batch\n");
  // The same report again is stale; b's real fence from another node is not this node's.
  json reg2 = {{"node", "api-g"}, {"pool", "spot"}, {"gpus", 1}, {"gpu_type", "a100"},
               {"gpu_mem_gb", 80}};
  const std::string other =
      sched_->Call("POST", "/v1/workers/register", worker_token_, reg2.dump()).body["node_credential"];
  auto again = finish({good});
  EXPECT_EQ(again.body["results"][0]["status"], 409) << again.raw;
  auto foreign = sched_->Call("POST", "/v1/workers/finish", other,
                              json({{"reports", {report(ob, ob["fence"])}}}).dump());
  ASSERT_EQ(foreign.status, 200) << foreign.raw;
  EXPECT_EQ(foreign.body["results"][0]["status"], 403) << foreign.raw;
  EXPECT_EQ(JobState(b), "running");
  auto last = finish({report(ob, ob["fence"])});
  EXPECT_EQ(last.body["results"][0]["status"], 200) << last.raw;
  EXPECT_EQ(JobState(b), "succeeded");
}

}  // namespace
}  // namespace frugal::testing
