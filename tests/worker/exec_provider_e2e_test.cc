// The exec provider end to end (issue 18): frugal-scheduler runs tests/fake_cloud/fake-cloud
// as the create, destroy and list commands of two pools; the fake cloud's "instances" are
// real frugal-worker processes that join with the token they were created with. A burst of
// jobs creates instances, a stockout falls back to the next pool, a reclaimed job resumes
// elsewhere, a leak is destroyed, idle instances are destroyed, and at the end nothing is
// left and what Frugal says the instances cost matches the fake cloud's own bill.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/clock.h"
#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/process.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

class ExecProviderE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cloud_ = dir_.path() + "/cloud";
    for (const char* pool : {"spot", "ondemand"}) {
      fs::create_directories(cloud_ + "/pools/" + pool);
      std::ofstream(cloud_ + "/pools/" + pool + "/boot_delay_s") << "1\n";
    }
    std::ofstream(cloud_ + "/pools/spot/price_per_hour") << "1.0\n";
    std::ofstream(cloud_ + "/pools/ondemand/price_per_hour") << "3.0\n";
    fs::create_directories(dir_.path() + "/ckpt");
  }

  // The instances' workers run in sessions of their own, as on a real cloud: whatever a
  // test leaves running (a failed assertion, an instance the test does not wait out) is
  // destroyed here, as an account's cleanup would, or it outlives the test.
  void TearDown() override {
    sched_.reset();  // first, so that nothing creates instances meanwhile
    std::istringstream alive(Cloud({"alive"}).out);
    for (std::string id; alive >> id;) Cloud({"destroy", id});
  }

  void Start(const std::string& boot_timeout = "20s") {
    std::string pools = "exec_pools:\n";
    for (const char* pool : {"spot", "ondemand"}) {
      pools += std::string("  - pool: ") + pool + "\n" +
               "    node_gpus: 1\n    max_nodes: 3\n" +
               "    create: " + kCloud + " create\n" +
               "    destroy: " + kCloud + " destroy\n" +
               "    list: " + kCloud + " list\n" +
               "    env: {FAKE_CLOUD_DIR: " + cloud_ + ", FAKE_CLOUD_WORKER_BIN: " +
               FRUGAL_WORKER_BIN + "}\n" +
               "    checkpoint_root: " + dir_.path() + "/ckpt\n" +
               "    command_timeout: 30s\n    boot_timeout: " + boot_timeout + "\n" +
               "    leak_grace: 2s\n    stockout_backoff: 4s\n    list_interval: 1s\n";
    }
    const std::string config = dir_.path() + "/scheduler.yaml";
    std::ofstream(config) << "lease_ttl: 4s\nheartbeat_interval: 1s\ncycle_interval: 1s\n"
                          << pools;
    SchedulerProcess::Options o;
    o.extra_args = {"--config", config};
    sched_ = std::make_unique<SchedulerProcess>(o);
    user_ = sched_->NewToken("vision", "alice");
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.00", 3,
                                             {{"idle_timeout_seconds", 3}})));
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("ondemand", "on_demand", "3.00", 3,
                                             {{"idle_timeout_seconds", 3}})));
  }

  CommandResult Cloud(const std::vector<std::string>& args) {
    std::vector<std::string> argv{kCloud};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, {{"FAKE_CLOUD_DIR", cloud_}}, std::chrono::seconds(60));
  }

  // The fake cloud's instances: id -> {pool, node, state}.
  std::map<std::string, std::vector<std::string>> CloudInstances() {
    std::map<std::string, std::vector<std::string>> out;
    std::istringstream in(Cloud({"instances"}).out);
    std::string id, pool, node, state;
    while (in >> id >> pool >> node >> state) out[id] = {pool, node, state};
    return out;
  }

  // A checkpointed training job, due in `due_minutes` (0: no deadline). Due in 30 minutes it
  // takes spot while spot can grow, but cannot wait for spot to come back after a stockout
  // (its outages are expected to last an hour), so it goes on demand.
  std::int64_t SubmitTrain(int steps, int due_minutes = 30) {
    json body = {{"command", {"bash", FRUGAL_TRAIN_SH}},
                 {"estimate_seconds", 60},
                 {"env", {{"TRAIN_STEPS", std::to_string(steps)},
                          {"CHECKPOINT_EVERY", "5"},
                          {"STEP_SECONDS", "0.2"},
                          {"FRUGAL_CLI", FRUGAL_CLI_BIN}}},
                 {"tolerance", "checkpointed"},
                 {"max_attempts", 1}};  // a reclaim must not use attempts up
    if (due_minutes > 0) {
      body["deadline"] = FormatRfc3339(std::chrono::time_point_cast<std::chrono::seconds>(
          std::chrono::system_clock::now() + std::chrono::minutes(due_minutes)));
    }
    auto r = sched_->Call("POST", "/v1/jobs", user_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body.value("id", std::int64_t{0}));
    return acknowledged_.back();
  }

  json Job(std::int64_t id) { return sched_->Job(id, user_); }

  std::string Logs(std::int64_t id) { return sched_->JobLogs(id, user_); }

  json Instances() {
    return sched_->Call("GET", "/v1/admin/instances?all=true", sched_->admin_token()).body;
  }

  std::string Diagnose() {
    return "instances: " + Instances().dump(1) + "\ncloud: " + Cloud({"instances"}).out +
           "\nscheduler: " + sched_->process().Stderr().substr(0, 20000);
  }

  void ExpectInvariants() {
    const std::string conninfo =
        "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
    for (const auto& p : CheckInvariants(conninfo, acknowledged_)) ADD_FAILURE() << p;
  }

  const std::string kCloud = std::string(FRUGAL_SOURCE_DIR) + "/tests/fake_cloud/fake-cloud";
  TempDir dir_{"frugal-exec-provider"};
  std::string cloud_;
  std::unique_ptr<SchedulerProcess> sched_;
  std::string user_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(ExecProviderE2eTest, BurstStockoutReclaimLeakAndIdleLeaveNothingAndTheBillsAgree) {
  Start();
  // An instance someone made by hand (or whose create output was lost): a leak.
  const std::string leak = Cloud({"leak", "ondemand", "stray-node"}).out;
  ASSERT_FALSE(leak.empty());

  // Spot is cheapest: a job without a deadline gets a spot instance.
  auto a = SubmitTrain(60, 0);  // 12 s of work, a checkpoint every second
  ASSERT_TRUE(WaitFor([&] { return Job(a)["state"] == "running"; }, std::chrono::seconds(60)))
      << Job(a).dump(2) << Diagnose();
  ASSERT_EQ(Job(a)["attempt_history"][0]["pool"], "spot") << Job(a).dump(2);
  const std::string a_node = Job(a)["attempt_history"][0]["node"];

  // Spot runs out: creates there exit 75, the pool backs off, and two jobs due in 8 minutes
  // (too soon to wait an expected hour for spot) go on demand.
  std::ofstream(cloud_ + "/pools/spot/stockout") << "no capacity\n";
  auto b = SubmitTrain(30, 8);
  auto c = SubmitTrain(30, 8);
  for (auto id : {b, c}) {
    ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "running"; }, std::chrono::seconds(90)))
        << Job(id).dump(2) << Diagnose();
    EXPECT_EQ(Job(id)["attempt_history"][0]["pool"], "ondemand") << Job(id).dump(2);
  }

  // The reclaim: notice, then the instance dies. Capacity comes back; job a resumes from its
  // checkpoint on a new instance.
  ASSERT_TRUE(WaitFor([&] { return Job(a)["latest_checkpoint"].is_object(); },
                      std::chrono::seconds(30)));
  std::string a_instance;
  for (const auto& [id, row] : CloudInstances())
    if (row[1] == a_node) a_instance = id;
  ASSERT_FALSE(a_instance.empty()) << Cloud({"instances"}).out;
  ASSERT_EQ(Cloud({"reclaim", a_instance, "2"}).exit_code, 0);
  fs::remove(cloud_ + "/pools/spot/stockout");

  for (auto id : {a, b, c}) {
    ASSERT_TRUE(WaitFor([&] { return Job(id)["state"] == "succeeded"; }, std::chrono::seconds(180)))
        << Job(id).dump(2) << Diagnose();
  }
  json ja = Job(a);
  EXPECT_EQ(ja["attempt_history"][0]["end_reason"], "preempted") << ja.dump(2);
  EXPECT_NE(ja["attempt_history"].back()["node"], a_node) << ja.dump(2);
  EXPECT_NE(Logs(a).find("resumed from "), std::string::npos) << Logs(a);

  // Idle instances are destroyed after the pools' idle timeout; the leak after leak_grace.
  ASSERT_TRUE(WaitFor(
      [&] {
        return Cloud({"list", "spot"}).out.empty() && Cloud({"list", "ondemand"}).out.empty() &&
               Cloud({"alive"}).out.empty();
      },
      std::chrono::seconds(90)))
      << Diagnose();
  ASSERT_TRUE(WaitFor(
      [&] {
        const json all = Instances();
        for (const auto& x : all["instances"])
          if (x["state"] != "gone") return false;
        return true;
      },
      std::chrono::seconds(30)))
      << Diagnose();

  json inst = Instances();
  std::map<std::string, int> reasons;
  for (const auto& x : inst["instances"]) ++reasons[x["reason"].get<std::string>()];
  EXPECT_GE(reasons["stockout"], 1) << inst.dump(1);
  EXPECT_EQ(reasons["leak"], 1) << inst.dump(1);
  EXPECT_EQ(reasons["vanished"], 1) << inst.dump(1);  // the reclaimed spot instance
  EXPECT_GE(reasons["idle"], 2) << inst.dump(1);
  // Every create, failure, leak and destroy is in the audit log.
  json audit = sched_->Call("GET", "/v1/admin/audit?limit=1000", sched_->admin_token()).body;
  std::map<std::string, int> actions;
  for (const auto& e : audit["entries"]) ++actions[e["action"].get<std::string>()];
  for (const char* action : {"instance.create", "instance.created", "instance.stockout",
                             "instance.leak", "instance.destroy", "instance.gone"})
    EXPECT_GE(actions[action], 1) << action << "\n" << audit.dump(1);

  // The bills: the fake cloud's (created to ended, by its own clock) against Frugal's
  // (create returned to destroy returned or `list` no longer showing it). They differ by
  // how long the commands and one list interval take: at most 3 s per instance.
  const std::string bill = Cloud({"bill"}).out;
  const auto total_at = bill.rfind("total ");
  ASSERT_NE(total_at, std::string::npos) << bill;
  const double cloud_dollars = std::stod(bill.substr(total_at + 6));
  const double frugal_dollars = inst["cost_micros"].get<double>() / 1e6;
  int billed = 0;
  for (const auto& x : inst["instances"]) billed += !x["created_at"].is_null();
  const double tolerance = billed * 3.0 * 3.0 / 3600;  // 3 s at the dearest pool's $3/h
  EXPECT_NEAR(frugal_dollars, cloud_dollars, tolerance) << bill << inst.dump(1);
  EXPECT_GT(cloud_dollars, 0);
  // The jobs' ledger is inside what the instances cost: usage cannot exceed paid time.
  json cost = sched_->Call("GET", "/v1/reports/cost?by=team", sched_->admin_token()).body;
  const double spend = cost["total"]["spend_micros"].get<double>() / 1e6;
  EXPECT_GT(spend, 0) << cost.dump(1);
  EXPECT_LE(spend, frugal_dollars + tolerance) << cost.dump(1) << inst.dump(1);
  ExpectInvariants();
}

TEST_F(ExecProviderE2eTest, AnInstanceThatNeverJoinsIsDestroyedAndThePoolBacksOff) {
  std::ofstream(cloud_ + "/pools/spot/never_join") << "1\n";
  Start("6s");
  auto a = SubmitTrain(10, 0);
  // The first spot instance never registers: destroyed at the boot timeout, the pool backs
  // off, and the job runs on demand instead (or on a later spot instance).
  ASSERT_TRUE(WaitFor([&] { return Job(a)["state"] == "succeeded"; }, std::chrono::seconds(120)))
      << Job(a).dump(2) << Diagnose();
  ASSERT_TRUE(WaitFor(
      [&] {
        const json all = Instances();
        for (const auto& x : all["instances"])
          if (x["reason"] == "boot_timeout" && x["state"] == "gone") return true;
        return false;
      },
      std::chrono::seconds(30)))
      << Diagnose();
  std::string never;
  for (const auto& [id, row] : CloudInstances())
    if (row[0] == "spot" && never.empty()) never = id;
  EXPECT_EQ(CloudInstances()[never][2], "terminated") << Cloud({"instances"}).out;
  ExpectInvariants();
}

}  // namespace
}  // namespace frugal::testing
