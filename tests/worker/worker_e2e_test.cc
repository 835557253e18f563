// Workers, checkpoints and recovery, end to end: the real scheduler (embedded PostgreSQL),
// real frugal-worker processes and examples/train.sh as the job. Each test ends with the
// invariant check: every acknowledged job ended, never two active attempts for one job,
// checkpoints only moved forward.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "scheduler/store/pg/pg_server.h"
#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Short leases so that loss is detected in seconds: heartbeat 1 s, TTL 3 s, cycle 1 s.
// Recovery bound = heartbeat + TTL + sweep interval + 1 s = 6 s.
const std::vector<std::string> kFastLeases = {"--lease-ttl", "3s", "--heartbeat-interval", "1s",
                                              "--cycle-interval", "1s"};

class WorkerE2eTest : public ::testing::Test {
 protected:
  void StartScheduler(SchedulerProcess::Options options = {}) {
    options.extra_args.insert(options.extra_args.end(), kFastLeases.begin(), kFastLeases.end());
    sched_ = std::make_unique<SchedulerProcess>(options);
    admin_ = sched_->admin_token();
    if (worker_token_.empty()) {
      worker_token_ = sched_->NewToken("infra", "workers", "worker");
      user_token_ = sched_->NewToken("vision", "alice");
      ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.10", 64)));
    }
  }

  std::unique_ptr<WorkerProcess> StartWorker(const std::string& node) {
    WorkerOptions o;
    o.url = sched_->url();
    o.token = worker_token_;
    o.pool = "spot";
    o.node = node;
    o.dir = dir_.path() + "/" + node;
    o.checkpoint_root = dir_.path() + "/checkpoints";
    o.grace = "5s";
    return std::make_unique<WorkerProcess>(o);
  }

  // Submits examples/train.sh; returns the job id.
  std::int64_t SubmitTrain(int steps, int every, const std::string& step_seconds,
                           int max_attempts = 3, json extra_env = json::object()) {
    json env = {{"TRAIN_STEPS", std::to_string(steps)},
                {"CHECKPOINT_EVERY", std::to_string(every)},
                {"STEP_SECONDS", step_seconds},
                {"FRUGAL_CLI", FRUGAL_CLI_BIN},
                {"PID_DIR", PidDir()}};
    env.update(extra_env);
    json body = {{"command", {"bash", "-c", "echo $$ > \"$PID_DIR/pid-$FRUGAL_ATTEMPT_ID\"; exec bash " +
                                                std::string(FRUGAL_TRAIN_SH)}},
                 {"env", env},
                 {"tolerance", "checkpointed"},
                 {"max_attempts", max_attempts}};
    auto r = sched_->Call("POST", "/v1/jobs", user_token_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body["id"].get<std::int64_t>());
    return acknowledged_.back();
  }

  // Where jobs write their pids: writable by any uid, since jobs run under their own.
  std::string PidDir() {
    const std::string dir = dir_.path() + "/pids";
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::all);
    return dir;
  }

  json Job(std::int64_t id) { return sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_token_).body; }

  std::string JobState(std::int64_t id) {
    json j = Job(id);
    return j.is_object() ? j.value("state", "") : "";
  }

  std::string Logs(std::int64_t id) {
    std::string out;
    json r = sched_->Call("GET", "/v1/jobs/" + std::to_string(id) + "/logs", user_token_).body;
    for (const auto& c : r["chunks"]) out += c["data"].get<std::string>();
    return out;
  }

  std::string Conninfo() const {
    return "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
  }

  void ExpectInvariants() {
    for (const auto& p : CheckInvariants(Conninfo(), acknowledged_)) ADD_FAILURE() << p;
  }

  TempDir dir_{"frugal-worker-e2e"};
  std::unique_ptr<SchedulerProcess> sched_;
  std::string admin_, worker_token_, user_token_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(WorkerE2eTest, CrashedWorkersJobResumesElsewhereFromItsCheckpoint) {
  StartScheduler();
  auto w1 = StartWorker("node-a");
  // a. 40 steps of 0.1 s, a checkpoint every 5 steps; it runs on node-a, the only node.
  auto job = SubmitTrain(40, 5, "0.1");
  ASSERT_TRUE(WaitFor([&] { return !Job(job)["latest_checkpoint"].is_null(); }, std::chrono::seconds(60)))
      << Job(job).dump(2) << w1->process().Stderr();
  // b. node-b joins; node-a dies with its processes.
  auto w2 = StartWorker("node-b");
  const auto crashed_at = Clock::now();
  w1->Crash();
  const std::int64_t step_at_crash = Job(job)["latest_checkpoint"]["step"].get<std::int64_t>();
  // c. The job runs again on node-b (attempt 2), then finishes.
  ASSERT_TRUE(WaitFor([&] { return Job(job)["attempt_history"].size() >= 2; }, std::chrono::seconds(60)));
  const double recovery_s =
      std::chrono::duration<double>(Clock::now() - crashed_at).count();
  std::printf("[ figure ] worker death -> job running again: %.2f s (bound 6 s = heartbeat 1 + "
              "TTL 3 + sweep 1 + 1)\n", recovery_s);
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "succeeded"; }, std::chrono::seconds(90)))
      << Job(job).dump(2) << w2->process().Stderr();
  json j = Job(job);
  EXPECT_EQ(j["attempt_history"][0]["end_reason"], "node_lost");
  EXPECT_EQ(j["attempt_history"][0]["node"], "node-a");
  EXPECT_EQ(j["attempt_history"].back()["node"], "node-b");
  // d. Attempt 2 resumed from a committed checkpoint at or after the one seen at the crash.
  const std::string logs = Logs(job);
  auto pos = logs.find("resumed from ");
  ASSERT_NE(pos, std::string::npos) << logs;
  EXPECT_GE(std::stoll(logs.substr(pos + 13)), step_at_crash) << logs;
  ExpectInvariants();
}

TEST_F(WorkerE2eTest, PreemptionNoticeSavesAFinalCheckpointAndDoesNotUseAnAttempt) {
  StartScheduler();
  auto w1 = StartWorker("spot-a");
  // max_attempts 1: if the preemption counted, the job could not run again.
  auto job = SubmitTrain(30, 1000, "0.1", /*max_attempts=*/1);
  ASSERT_TRUE(WaitFor([&] { return Logs(job).find("step 5/") != std::string::npos; },
                      std::chrono::seconds(60)))
      << Logs(job) << w1->process().Stderr();
  auto w2 = StartWorker("spot-b");
  w1->Notice();
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "succeeded"; }, std::chrono::seconds(90)))
      << Job(job).dump(2) << w1->process().Stderr() << w2->process().Stderr();
  json j = Job(job);
  ASSERT_GE(j["attempt_history"].size(), 2u);
  EXPECT_EQ(j["attempt_history"][0]["end_reason"], "preempted");
  EXPECT_EQ(j["attempt_history"][0]["node"], "spot-a");
  EXPECT_EQ(j["attempt_history"][1]["node"], "spot-b");
  // Checkpoint interval 1000 > 30 steps: the only checkpoint before the end is the one
  // train.sh wrote on SIGTERM, so a resume proves the final checkpoint was committed.
  const std::string logs = Logs(job);
  EXPECT_NE(logs.find("resumed from "), std::string::npos) << logs;
  ExpectInvariants();
}

TEST_F(WorkerE2eTest, StaleAttemptIsRefusedAndItsProcessKilled) {
  StartScheduler();
  auto w1 = StartWorker("node-s");
  auto job = SubmitTrain(600, 10, "0.1");
  ASSERT_TRUE(WaitFor([&] { return Job(job)["attempt_history"].size() == 1 &&
                                   Logs(job).find("step 2/") != std::string::npos; },
                      std::chrono::seconds(60)));
  json attempt = Job(job)["attempt_history"][0];
  const std::int64_t attempt_id = attempt["id"].get<std::int64_t>();
  const std::string pid_file = PidDir() + "/pid-" + std::to_string(attempt_id);
  pid_t pid = std::stoi(ReadFile(pid_file));
  ASSERT_EQ(kill(pid, 0), 0);
  // a. No other credential can register as node-s while its worker heartbeats.
  const std::string reg_body = json{{"node", "node-s"}, {"pool", "spot"}, {"gpus", 1},
                                    {"gpu_type", "a100"}, {"gpu_mem_gb", 80}}.dump();
  auto refused = sched_->Call("POST", "/v1/workers/register", worker_token_, reg_body);
  EXPECT_EQ(refused.status, 409) << refused.raw;
  // b. The worker freezes past its lease; another incarnation registers as node-s: the
  // running attempt is now stale.
  w1->process().Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(4));  // TTL 3 s
  auto reg = sched_->Call("POST", "/v1/workers/register", worker_token_, reg_body);
  ASSERT_EQ(reg.status, 200) << reg.raw;
  // c. A report fenced with the old epoch is refused.
  auto stale = sched_->Call("POST", "/v1/workers/attempts/" + std::to_string(attempt_id) + "/finish",
                            reg.body["node_credential"].get<std::string>(),
                            json{{"lease_epoch", reg.body["lease_epoch"].get<int>() - 1},
                                 {"fence", std::string(64, 'f')},
                                 {"outcome", "succeeded"}, {"exit_code", 0}}.dump());
  EXPECT_EQ(stale.status, 409) << stale.raw;
  // d. The real worker wakes, sees its lease is gone and kills the stale process.
  w1->process().Signal(SIGCONT);
  EXPECT_TRUE(WaitFor([&] { return kill(pid, 0) != 0; }, std::chrono::seconds(30)))
      << w1->process().Stderr();
  // e. The job runs again (on node-s, re-registered by the worker) and we cancel it.
  ASSERT_TRUE(WaitFor([&] { return Job(job)["attempt_history"].size() >= 2; }, std::chrono::seconds(60)));
  EXPECT_EQ(Job(job)["attempt_history"][0]["end_reason"], "node_lost");
  auto c = sched_->Call("POST", "/v1/jobs/" + std::to_string(job) + "/cancel", user_token_, "{}");
  EXPECT_EQ(c.status, 200) << c.raw;
  ASSERT_TRUE(WaitFor([&] { return JobState(job) == "cancelled"; }, std::chrono::seconds(60)))
      << Job(job).dump(2);
  ExpectInvariants();
}

TEST_F(WorkerE2eTest, AlwaysFailingJobEndsFailedAfterExactlyMaxAttempts) {
  StartScheduler();
  auto w1 = StartWorker("node-f");
  auto bad = SubmitTrain(5, 5, "0.05", /*max_attempts=*/2, json{{"FAIL_ALWAYS", "1"}});
  auto good = SubmitTrain(5, 5, "0.05");
  // 2 attempts with a 5 s backoff between them.
  ASSERT_TRUE(WaitFor([&] { return JobState(bad) == "failed"; }, std::chrono::seconds(90)))
      << Job(bad).dump(2);
  ASSERT_TRUE(WaitFor([&] { return JobState(good) == "succeeded"; }, std::chrono::seconds(60)))
      << Job(good).dump(2);
  json j = Job(bad);
  ASSERT_EQ(j["attempt_history"].size(), 2u);
  for (const auto& a : j["attempt_history"]) {
    EXPECT_EQ(a["end_reason"], "failed");
    EXPECT_EQ(a["exit_code"], 3);
  }
  ExpectInvariants();
}

// Job arrays (decision 0026) on a real worker: a 4-GPU node could run all four tasks at
// once, `max_running` 2 lets at most two run, and each process sees its own index.
TEST_F(WorkerE2eTest, ArrayRunsAtMostMaxRunningTasksEachWithItsIndex) {
  StartScheduler();
  WorkerOptions o;
  o.url = sched_->url();
  o.token = worker_token_;
  o.pool = "spot";
  o.node = "node-arr";
  o.gpus = 4;
  o.dir = dir_.path() + "/node-arr";
  o.checkpoint_root = dir_.path() + "/checkpoints";
  WorkerProcess w(o);
  const std::string out = PidDir();
  // Each task counts the tasks alive when it starts (its own marker included).
  const std::string script =
      "touch \"$OUT/alive-$FRUGAL_ARRAY_INDEX\"; ls \"$OUT\" | grep -c '^alive-' > "
      "\"$OUT/seen-$FRUGAL_ARRAY_INDEX\"; echo \"$FRUGAL_ARRAY_ID $FRUGAL_ARRAY_INDEX\" > "
      "\"$OUT/index-$FRUGAL_ARRAY_INDEX\"; sleep 2; rm \"$OUT/alive-$FRUGAL_ARRAY_INDEX\"";
  json body = {{"job", {{"command", {"bash", "-c", script}}, {"env", {{"OUT", out}}}}},
               {"first", 0},
               {"last", 3},
               {"max_running", 2}};
  auto r = sched_->Call("POST", "/v1/arrays", user_token_, body.dump());
  ASSERT_EQ(r.status, 201) << r.raw;
  const std::string id = r.body["id"].dump();
  for (auto j = r.body["first_job"].get<std::int64_t>(); j <= r.body["last_job"].get<std::int64_t>();
       ++j)
    acknowledged_.push_back(j);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto a = sched_->Call("GET", "/v1/arrays/" + id, user_token_);
        return a.body["states"] == json({{"succeeded", 4}});
      },
      std::chrono::seconds(90)))
      << sched_->Call("GET", "/v1/arrays/" + id, user_token_).raw;
  int most = 0;
  for (int i = 0; i < 4; ++i) {
    std::ifstream seen(out + "/seen-" + std::to_string(i)), index(out + "/index-" + std::to_string(i));
    int n = 0;
    std::string array, idx;
    ASSERT_TRUE(seen >> n) << "task " << i << " did not run";
    ASSERT_TRUE(index >> array >> idx);
    EXPECT_EQ(array, id);
    EXPECT_EQ(idx, std::to_string(i));
    most = std::max(most, n);
  }
  EXPECT_LE(most, 2) << "more tasks ran at once than max_running";
  ExpectInvariants();
}

TEST_F(WorkerE2eTest, SchedulerKilledMidRunLosesNoJobAndRunsNoneTwice) {
  SchedulerProcess::Options o;
  o.listen = "127.0.0.1:" + std::to_string(FreePort());
  // Outside the fixture's own temp dir: it must outlive the first scheduler process.
  o.state_dir = dir_.path() + "/scheduler-state";
  StartScheduler(o);
  auto w1 = StartWorker("node-k1");
  auto w2 = StartWorker("node-k2");
  for (int i = 0; i < 4; ++i) SubmitTrain(30, 5, "0.1");
  ASSERT_TRUE(WaitFor([&] { return JobState(acknowledged_[0]) == "running"; }, std::chrono::seconds(60)));
  // a. kill -9 the scheduler mid-run; its embedded PostgreSQL keeps running.
  sched_->Kill();
  std::this_thread::sleep_for(std::chrono::seconds(2));
  // b. Restart on the same state directory and address: the workers find it again.
  o.bootstrap = false;
  o.extra_args.insert(o.extra_args.end(), kFastLeases.begin(), kFastLeases.end());
  sched_ = std::make_unique<SchedulerProcess>(o);
  for (auto id : acknowledged_) {
    EXPECT_TRUE(WaitFor([&] { return JobState(id) == "succeeded"; }, std::chrono::seconds(120)))
        << Job(id).dump(2);
  }
  ExpectInvariants();
  // The restarted scheduler reused a PostgreSQL it did not start; stop it for cleanup.
  sched_->Stop();
  store::PgServer leftover({o.state_dir + "/pg", 5432, false});
  EXPECT_TRUE(leftover.Start().ok());  // finds the running server
  EXPECT_TRUE(leftover.Stop(/*force=*/true).ok());
}

}  // namespace
}  // namespace frugal::testing
