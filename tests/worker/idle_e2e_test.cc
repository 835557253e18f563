// Idle GPU reclamation and right-sizing end to end (decision 0012): the real scheduler, a
// real frugal-worker whose GPU metrics source (the nvidia_smi setting) is a script printing
// nvidia-smi's CSV with 0% utilisation and 11469 MiB used, and examples/train.sh as the job.
// Warn: one warning event, the job runs on and succeeds, and its status then advises the
// cheaper t4 pool. Requeue: the checkpointed job is stopped, goes back to pending with the
// reason, and resumes from its checkpoint.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "tests/api/prom_text.h"
#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

class IdleE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerProcess::Options o;
    o.extra_args = {"--lease-ttl", "5s", "--heartbeat-interval", "1s", "--cycle-interval", "1s"};
    sched_ = std::make_unique<SchedulerProcess>(o);
    admin_ = sched_->admin_token();
    user_ = sched_->NewToken("vision", "alice");
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("a100-od", "on_demand", "3.10", 8, {{"speed", 2.0}})));
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("t4-od", "on_demand", "0.35", 8,
                                             {{"gpu_type", "t4"}, {"gpu_mem_gb", 16}})));
    auto g = Admin("POST", "/v1/admin/guardrails",
                   {{"idle", {{"threshold_percent", 5}, {"window_seconds", 3}}}});
    ASSERT_EQ(g.status, 200) << g.raw << sched_->process().Stderr();
    // nvidia-smi's query format: index, name, memory.total, utilization.gpu, memory.used.
    smi_ = dir_.path() + "/nvidia-smi";
    std::ofstream(smi_) << "#!/bin/sh\necho '0, NVIDIA A100-SXM4-80GB, 81920, 0, 11469'\n";
    chmod(smi_.c_str(), 0755);
    WorkerOptions w;
    w.url = sched_->url();
    w.token = sched_->NewToken("infra", "workers", "worker");
    w.pool = "a100-od";
    w.node = "idle-node";
    w.dir = dir_.path() + "/idle-node";
    w.checkpoint_root = dir_.path() + "/checkpoints";
    w.grace = "5s";
    w.nvidia_smi = smi_;
    worker_ = std::make_unique<WorkerProcess>(w);
  }

  HttpResult Admin(const std::string& method, const std::string& path, const json& body) {
    return sched_->Call(method, path, admin_, body.dump());
  }
  std::int64_t SubmitTrain(int steps, const std::string& step_seconds) {
    json body = {{"command", {"bash", FRUGAL_TRAIN_SH}},
                 {"env", {{"TRAIN_STEPS", std::to_string(steps)}, {"CHECKPOINT_EVERY", "2"},
                          {"STEP_SECONDS", step_seconds}, {"FRUGAL_CLI", FRUGAL_CLI_BIN}}},
                 {"gpu_types", {"a100"}},
                 {"tolerance", "checkpointed"}};
    auto r = sched_->Call("POST", "/v1/jobs", user_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body.value("id", std::int64_t{0}));
    return acknowledged_.back();
  }
  json Job(std::int64_t id) {
    return sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_).body;
  }
  int Events(const json& job, const std::string& kind) {
    int n = 0;
    for (const auto& e : job["events"]) n += e["kind"] == kind;
    return n;
  }
  std::string Conninfo() const {
    return "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
  }

  TempDir dir_{"frugal-idle-e2e"};
  std::unique_ptr<SchedulerProcess> sched_;
  std::unique_ptr<WorkerProcess> worker_;
  std::string admin_, user_, smi_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(IdleE2eTest, WarnPolicyWarnsOnceAndTheEndedJobGetsRightSizingAdvice) {
  // a. 40 steps of 0.25 s (10 s) at 0% utilisation: warned after the 3 s window.
  auto job = SubmitTrain(40, "0.25");
  ASSERT_TRUE(WaitFor([&] { return Events(Job(job), "idle_warning") >= 1; },
                      std::chrono::seconds(60)))
      << Job(job).dump(2) << worker_->process().Stderr();
  EXPECT_EQ(Job(job)["state"], "running");  // warn only: it keeps running
  // b. It succeeds, warned exactly once.
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "succeeded"; }, std::chrono::seconds(90)))
      << Job(job).dump(2);
  json j = Job(job);
  EXPECT_EQ(Events(j, "idle_warning"), 1) << j["events"].dump(2);
  EXPECT_EQ(Events(j, "stop_ordered"), 0);
  // c. Peak 11469 MiB (11.2 GB) fits t4 (16 GB): a100 at $3.10 and speed 2 vs t4 at $0.35
  // and speed 1: the same work costs 2 x 0.35 / 3.10 = 22.6% as much.
  EXPECT_EQ(j["attempt_history"][0]["peak_gpu_mem_mb"], 11469);
  ASSERT_TRUE(j["right_sizing"].is_object()) << j.dump(2);
  EXPECT_EQ(j["right_sizing"]["pool"], "t4-od");
  const auto actual = j["right_sizing"]["actual_micros"].get<std::int64_t>();
  const auto alt = j["right_sizing"]["alternative_micros"].get<std::int64_t>();
  EXPECT_GT(actual, alt);
  EXPECT_NEAR(static_cast<double>(alt) / static_cast<double>(actual), 0.7 / 3.1, 0.01);
  EXPECT_NE(j["right_sizing"]["message"].get<std::string>().find("peak 11.2 GB fits t4 (16 GB"),
            std::string::npos);
  auto status = RunCommand({FRUGAL_CLI_BIN, "status", std::to_string(job)}, sched_->CliEnv(user_));
  EXPECT_NE(status.out.find("Right-sizing:"), std::string::npos) << status.out << status.err;
  // d. The cost report lists it with the total potential saving.
  auto cost = sched_->Call("GET", "/v1/reports/cost?by=job", user_);
  ASSERT_EQ(cost.status, 200) << cost.raw;
  ASSERT_EQ(cost.body["right_sizing"]["jobs"].size(), 1u) << cost.raw;
  EXPECT_EQ(cost.body["right_sizing"]["jobs"][0]["job_id"], job);
  EXPECT_EQ(cost.body["right_sizing"]["potential_saving_micros"], actual - alt);
  auto table = RunCommand({FRUGAL_CLI_BIN, "cost", "--by", "job"}, sched_->CliEnv(user_));
  EXPECT_NE(table.out.find("Right-sizing (potential saving $"), std::string::npos) << table.out;
  for (const auto& p : CheckInvariants(Conninfo(), acknowledged_)) ADD_FAILURE() << p;
}

TEST_F(IdleE2eTest, RequeuePolicyRequeuesTheCheckpointedJobWithTheReason) {
  ASSERT_EQ(Admin("POST", "/v1/admin/teams/vision/idle-policy", {{"idle_policy", "requeue"}}).status,
            200);
  // a. A long job (200 x 0.25 s) that checkpoints every 2 steps.
  auto job = SubmitTrain(200, "0.25");
  // b. After the window it is stopped and requeued: attempt 1 ends preempted, the job went
  // back to pending with the idle reason, and attempt 2 starts from the checkpoint.
  ASSERT_TRUE(WaitFor([&] { return Job(job)["attempt_history"].size() >= 2; },
                      std::chrono::seconds(90)))
      << Job(job).dump(2) << worker_->process().Stderr();
  json j = Job(job);
  EXPECT_EQ(j["attempt_history"][0]["end_reason"], "preempted") << j.dump(2);
  EXPECT_EQ(j["attempt_history"][0]["stop_kind"], "idle_reclaim") << j.dump(2);
  EXPECT_GE(Events(j, "idle_warning"), 1);
  // The idle stop shows as one in /metrics, not as a preemption by the node (the job may
  // have been requeued again since: it idles on).
  const auto scrape = sched_->Call("GET", "/metrics", admin_);
  auto m = ParsePromText(scrape.raw);
  ASSERT_TRUE(m.ok()) << m.status().ToString() << scrape.raw;
  EXPECT_GE(m->Sum("frugal_preemptions_total", {{"pool", "a100-od"}, {"cause", "idle_reclaim"}}), 1)
      << scrape.raw;
  EXPECT_EQ(m->Sum("frugal_preemptions_total", {{"cause", "node"}}), 0) << scrape.raw;
  EXPECT_GE(m->Sum("frugal_idle_stops_total", {{"pool", "a100-od"}, {"action", "requeue"}}), 1)
      << scrape.raw;
  bool requeued = false;
  for (const auto& e : j["events"]) {
    if (e["to"] == "pending" &&
        e["message"].get<std::string>().rfind("requeued: GPUs idle on idle-node", 0) == 0)
      requeued = true;
  }
  EXPECT_TRUE(requeued) << j["events"].dump(2);
  // c. Cancel works as ever; the job ends cancelled.
  ASSERT_EQ(sched_->Call("POST", "/v1/jobs/" + std::to_string(job) + "/cancel", user_).status, 200);
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "cancelled"; }, std::chrono::seconds(60)))
      << Job(job).dump(2);
  for (const auto& p : CheckInvariants(Conninfo(), acknowledged_)) ADD_FAILURE() << p;
}

}  // namespace
}  // namespace frugal::testing
