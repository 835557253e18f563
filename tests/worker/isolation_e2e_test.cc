// Multi-tenant safety end to end (issue 15, decision 0019): the real scheduler, real
// frugal-worker processes and jobs that behave as attackers. A job must not reach its
// worker's credentials or another attempt's spool; no worker token may act for another
// node; a job must never outlive its worker or run twice; a finished result survives an
// unreachable scheduler. Run as root (as CI does), jobs run under their own uids.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::vector<std::string> kFastLeases = {"--lease-ttl", "3s", "--heartbeat-interval", "1s",
                                              "--cycle-interval", "1s"};

// Every live process that carries FRUGAL_JOB_ID=`job`: pid, ppid, state and command line.
std::string DescribeJobProcesses(const std::string& job) {
  std::string out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream env(e.path() / "environ");
    std::stringstream text;
    text << env.rdbuf();
    if (text.str().find("FRUGAL_JOB_ID=" + job + '\0') == std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    std::getline(stat, line);
    out += line + "\n";
  }
  return out;
}

// FRUGAL_JOB_ID -> the FRUGAL_ATTEMPT_IDs of live processes that carry it and whose spool
// is under `root` (this test's workers: other tests' jobs also carry FRUGAL_JOB_ID=1). Root
// reads every /proc/<pid>/environ.
std::map<std::string, std::set<std::string>> LiveJobProcesses(const std::string& root) {
  std::map<std::string, std::set<std::string>> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream status(e.path() / "status");
    std::string line;
    bool zombie = false;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0) zombie = line.find('Z') != std::string::npos;
    }
    if (zombie) continue;
    std::ifstream env(e.path() / "environ");
    std::stringstream text;
    text << env.rdbuf();
    std::string job, attempt, item;
    bool ours = false;
    std::istringstream items(text.str());
    while (std::getline(items, item, '\0')) {
      if (item.rfind("FRUGAL_JOB_ID=", 0) == 0) job = item.substr(14);
      if (item.rfind("FRUGAL_ATTEMPT_ID=", 0) == 0) attempt = item.substr(18);
      if (item.rfind("FRUGAL_CHECKPOINT_SPOOL=" + root, 0) == 0) ours = true;
    }
    if (!ours) continue;
    // The job's processes and its keeper (whose environment is the job's) carry these.
    if (!job.empty() && !attempt.empty()) out[job].insert(attempt);
  }
  return out;
}

class IsolationE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "job isolation needs a worker running as root (CI is)";
    SchedulerProcess::Options options;
    options.extra_args = kFastLeases;
    sched_ = std::make_unique<SchedulerProcess>(options);
    join_token_ = sched_->NewToken("infra", "workers", "worker");
    user_token_ = sched_->NewToken("vision", "alice");
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.10", 64)));
    // Jobs (other uids) write here.
    std::filesystem::create_directories(shared_);
    std::filesystem::permissions(shared_, std::filesystem::perms::all);
  }

  WorkerOptions Options(const std::string& node, int gpus = 4) {
    WorkerOptions o;
    o.url = sched_->url();
    o.token = join_token_;
    o.pool = "spot";
    o.node = node;
    o.gpus = gpus;
    o.dir = dir_.path() + "/" + node;
    o.checkpoint_root = dir_.path() + "/checkpoints";
    o.grace = "2s";
    return o;
  }

  std::int64_t Submit(const std::string& script, json env = json::object(), int gpus = 1) {
    env["FRUGAL_CLI"] = FRUGAL_CLI_BIN;
    env["SHARED"] = shared_;
    json body = {{"command", {"bash", "-c", script}}, {"env", env}, {"gpus", gpus},
                 {"tolerance", "checkpointed"}};
    auto r = sched_->Call("POST", "/v1/jobs", user_token_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    acknowledged_.push_back(r.body["id"].get<std::int64_t>());
    return acknowledged_.back();
  }

  json Job(std::int64_t id) {
    return sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_token_).body;
  }
  std::string State(std::int64_t id) { return Job(id).value("state", ""); }
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

  TempDir dir_{"frugal-isolation-e2e"};
  std::string shared_ = dir_.path() + "/shared";
  std::unique_ptr<SchedulerProcess> sched_;
  std::string join_token_, user_token_;
  std::vector<std::int64_t> acknowledged_;
};

// Holes 1 and 2: a researcher's job read the worker token from /proc/$PPID/environ, and
// wrote a checkpoint report (step 999999) into another team's attempt spool on the node.
TEST_F(IsolationE2eTest, AJobReachesNeitherItsWorkersSecretsNorAnotherAttemptsSpool) {
  auto worker = std::make_unique<WorkerProcess>(Options("node-a"));
  // The victim checkpoints at step 1, waits, then at step 2.
  const auto victim = Submit(
      "$FRUGAL_CLI checkpoint --step 1 --uri file:///ckpt/1 && touch $SHARED/victim-up && "
      "sleep 6 && $FRUGAL_CLI checkpoint --step 2 --uri file:///ckpt/2 && sleep 2");
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(shared_ + "/victim-up"); }, 60s))
      << worker->process().Stderr();
  const std::string attack = R"SH(
    probe() { if out=$(cat "$1" 2>/dev/null) && [ -n "$out" ]; then echo "READ $1: $(echo "$out" | tr '\0' ' ')"; else echo "denied $1"; fi; }
    probe /proc/$PPID/environ
    gp=$(awk '{print $4}' /proc/$PPID/stat 2>/dev/null)
    [ -n "$gp" ] && probe /proc/$gp/environ
    work=$(dirname "$(dirname "$FRUGAL_CHECKPOINT_SPOOL")")
    probe "$work/node.credential"
    probe "$work/attempts.journal"
    # The work directory cannot be listed; attempt ids are guessable, so guess nearby ones.
    for n in $(seq $((FRUGAL_ATTEMPT_ID - 5)) $((FRUGAL_ATTEMPT_ID + 5))); do
      s=$work/attempt-$n/spool
      [ "$s" = "$FRUGAL_CHECKPOINT_SPOOL" ] && continue
      probe "$work/attempt-$n/state.json"
      if FRUGAL_CHECKPOINT_SPOOL=$s $FRUGAL_CLI checkpoint --step 999999 --uri file:///forged 2>/dev/null; then
        echo "WROTE $s"; else echo "denied write $s"; fi
      if ls "$s" >/dev/null 2>&1; then echo "LISTED $s"; fi
    done
    env | grep -E 'FRUGAL_(WORKER_)?TOKEN|frg_|frn_' && echo "LEAKED env"
    echo attack-done)SH";
  const auto attacker = Submit(attack);
  ASSERT_TRUE(WaitFor([&] { return State(attacker) == "succeeded"; }, 60s)) << Job(attacker).dump(2);
  ASSERT_TRUE(WaitFor([&] { return State(victim) == "succeeded"; }, 60s)) << Job(victim).dump(2);
  const std::string logs = Logs(attacker);
  std::printf("%s\n", logs.c_str());
  EXPECT_NE(logs.find("attack-done"), std::string::npos);
  EXPECT_NE(logs.find("denied /proc/"), std::string::npos);  // it did try
  for (const char* leak : {"READ", "WROTE", "LISTED", "LEAKED", "frg_", "frn_"}) {
    EXPECT_EQ(logs.find(leak), std::string::npos) << leak << " in:\n" << logs;
  }
  // The victim's checkpoints are its own, in order.
  json v = Job(victim);
  EXPECT_EQ(v["latest_checkpoint"]["step"], 2) << v.dump(2);
  EXPECT_EQ(v["latest_checkpoint"]["uri"], "file:///ckpt/2");
  ExpectInvariants();
}

// Hole 1: any worker token could re-register as any node, or report for any attempt.
TEST_F(IsolationE2eTest, WorkerCredentialsAreBoundToTheirNode) {
  auto worker = std::make_unique<WorkerProcess>(Options("node-a"));
  const auto job = Submit("touch $SHARED/up; sleep 30");
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(shared_ + "/up"); }, 60s));
  const std::int64_t attempt = Job(job)["attempt_history"][0]["id"].get<std::int64_t>();
  const std::string path = "/v1/workers/attempts/" + std::to_string(attempt);
  json ck = {{"lease_epoch", 1}, {"fence", std::string(64, '0')}, {"step", 999999},
             {"uri", "file:///forged"}};
  // a. A join token cannot report, nor take over the live node.
  EXPECT_EQ(sched_->Call("POST", path + "/checkpoint", join_token_, ck.dump()).status, 403);
  json reg = {{"node", "node-a"}, {"pool", "spot"}, {"gpus", 4}, {"gpu_type", "a100"},
              {"gpu_mem_gb", 80}};
  auto takeover = sched_->Call("POST", "/v1/workers/register", join_token_, reg.dump());
  EXPECT_EQ(takeover.status, 409) << takeover.raw;
  // b. Another node's credential cannot report for node-a's attempt, fence or not.
  reg["node"] = "node-x";
  auto other = sched_->Call("POST", "/v1/workers/register", join_token_, reg.dump());
  ASSERT_EQ(other.status, 200) << other.raw;
  const std::string cred = other.body["node_credential"];
  ASSERT_EQ(cred.rfind("frn_", 0), 0u);
  auto forged = sched_->Call("POST", path + "/checkpoint", cred, ck.dump());
  EXPECT_EQ(forged.status, 403) << forged.raw;
  auto finish = sched_->Call("POST", path + "/finish", cred,
                             json({{"lease_epoch", 1}, {"fence", std::string(64, 'a')},
                                   {"outcome", "succeeded"}}).dump());
  EXPECT_EQ(finish.status, 403) << finish.raw;
  // c. It cannot heartbeat or register as node-a either.
  json hb = {{"node", "node-a"}, {"lease_epoch", 1}};
  EXPECT_EQ(sched_->Call("POST", "/v1/workers/heartbeat", cred, hb.dump()).status, 403);
  reg["node"] = "node-a";
  EXPECT_EQ(sched_->Call("POST", "/v1/workers/register", cred, reg.dump()).status, 403);
  // d. A malformed fence is a 400 that says what to send.
  ck["fence"] = "1";
  auto bad = sched_->Call("POST", path + "/checkpoint", cred, ck.dump());
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["field"], "fence");
  // Nothing forged landed; the job still runs on node-a.
  EXPECT_TRUE(Job(job)["latest_checkpoint"].is_null());
  EXPECT_EQ(State(job), "running");
  sched_->Call("POST", "/v1/jobs/" + std::to_string(job) + "/cancel", user_token_, "{}");
  ASSERT_TRUE(WaitFor([&] { return State(job) == "cancelled"; }, 30s));
}

// Hole 3: kill -9 of a worker left its jobs running; a restarted worker ran the same job
// again beside them. Twenty kills: every time, the job's processes die with the worker,
// and at no moment do two attempts of one job have live processes.
TEST_F(IsolationE2eTest, KilledWorkersJobsDieWithItAndNeverRunTwice) {
  const WorkerOptions options = Options("node-a");
  auto worker = std::make_unique<WorkerProcess>(options);
  // A job whose process tree outlives a plain kill of its leader: a background child.
  const auto job = Submit("sleep 600 & sleep 600 & wait");
  std::atomic<bool> watching{true};
  std::atomic<int> doubles{0}, samples{0};
  std::thread watcher([&] {
    while (watching) {
      for (const auto& [id, attempts] : LiveJobProcesses(dir_.path())) {
        if (attempts.size() > 1) ++doubles;
      }
      ++samples;
      std::this_thread::sleep_for(20ms);
    }
  });
  const std::string id = std::to_string(job);
  int kills = 0;
  double slowest_s = 0;
  for (int i = 0; i < 20; ++i) {
    if (!WaitFor([&] { return LiveJobProcesses(dir_.path()).count(id) > 0; }, 60s)) {
      ADD_FAILURE() << "cycle " << i << ": " << Job(job).dump(2) << worker->process().Stderr();
      break;
    }
    worker->process().Signal(SIGKILL);  // the worker alone: its jobs are not told
    worker->process().Wait(10s);
    ++kills;
    const auto killed_at = std::chrono::steady_clock::now();
    const bool gone = WaitFor([&] { return LiveJobProcesses(dir_.path()).count(id) == 0; }, 5s);
    if (!gone) {
      ADD_FAILURE() << "cycle " << i << ": the job outlived its worker:\n"
                    << DescribeJobProcesses(id) << worker->process().Stderr();
      break;
    }
    slowest_s = std::max(slowest_s, std::chrono::duration<double>(
                                        std::chrono::steady_clock::now() - killed_at).count());
    worker = std::make_unique<WorkerProcess>(options);  // same node, same directories
  }
  std::printf("[ figure ] %d worker kill -9s: job processes gone within %.2f s at worst\n", kills,
              slowest_s);
  watching = false;
  watcher.join();
  std::printf("[ figure ] %d samples of live job processes, %d with two attempts at once\n",
              samples.load(), doubles.load());
  EXPECT_EQ(doubles.load(), 0);
  sched_->Call("POST", "/v1/jobs/" + id + "/cancel", user_token_, "{}");
  ASSERT_TRUE(WaitFor([&] { return State(job) == "cancelled"; }, 60s)) << Job(job).dump(2);
  ExpectInvariants();
}

// What a job leaves behind in another session (setsid escapes the group kill) dies when the
// job ends: the uid sweep at reap (one scan of /proc per pass, decision 0027).
TEST_F(IsolationE2eTest, AProcessAJobLeftInAnotherSessionDiesWhenTheJobEnds) {
  auto worker = std::make_unique<WorkerProcess>(Options("node-e"));
  // The escapee writes its own pid (setsid may fork, so $! would be the wrong process) and
  // the job waits until it has.
  const auto job = Submit(
      "setsid bash -c 'echo $$ > \"$SHARED/escapee.tmp\"; mv \"$SHARED/escapee.tmp\" "
      "\"$SHARED/escapee\"; exec sleep 600' </dev/null >/dev/null 2>&1 & "
      "while [ ! -s \"$SHARED/escapee\" ]; do sleep 0.05; done");
  ASSERT_TRUE(WaitFor([&] { return State(job) == "succeeded"; }, 60s))
      << Job(job).dump(2) << worker->process().Stderr();
  std::ifstream in(shared_ + "/escapee");
  pid_t pid = 0;
  ASSERT_TRUE(in >> pid) << "the job did not record its escapee";
  auto alive = [pid] {
    std::ifstream status("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.rfind("State:", 0) == 0) return line.find('Z') == std::string::npos;
    }
    return false;
  };
  EXPECT_TRUE(WaitFor([&] { return !alive(); }, 10s)) << "pid " << pid << " outlived its job";
  if (alive()) kill(pid, SIGKILL);
  ExpectInvariants();
}

// A job inherited every descriptor its worker held without close-on-exec: whatever the
// worker's launcher left open (here a file the test opens, as a shell or a service manager
// may) reached other teams' code. A job gets its standard input, output and error only.
TEST_F(IsolationE2eTest, AJobGetsOnlyItsStandardFilesNotTheWorkersOthers) {
  const std::string secret = dir_.path() + "/launcher-secret";
  std::ofstream(secret) << "launcher-secret-contents\n";
  const int fd = open(secret.c_str(), O_RDONLY);  // inherited by the worker started next
  ASSERT_GE(fd, 3);
  auto worker = std::make_unique<WorkerProcess>(Options("node-f"));
  close(fd);
  // ls holds one descriptor of its own (the directory it lists) beside 0, 1 and 2.
  const auto job = Submit("echo \"fds: $(ls /proc/self/fd | wc -l)\"; ls -l /proc/$$/fd");
  ASSERT_TRUE(WaitFor([&] { return State(job) == "succeeded"; }, 60s))
      << Job(job).dump(2) << worker->process().Stderr();
  const std::string logs = Logs(job);
  EXPECT_NE(logs.find("fds: 4\n"), std::string::npos) << logs;
  EXPECT_EQ(logs.find("launcher-secret"), std::string::npos) << logs;
  ExpectInvariants();
}

// Hole 8: a job that finished while the scheduler was unreachable for longer than the
// lease ran again.
TEST_F(IsolationE2eTest, AResultReportedAfterTheSchedulerWasUnreachableIsNotRunAgain) {
  auto worker = std::make_unique<WorkerProcess>(Options("node-a"));
  const auto job = Submit(
      "echo run >> $SHARED/runs; while [ ! -e $SHARED/go ]; do sleep 0.1; done; exit 0");
  ASSERT_TRUE(WaitFor([&] { return std::filesystem::exists(shared_ + "/runs"); }, 60s));
  sched_->process().Signal(SIGSTOP);
  std::ofstream(shared_ + "/go") << "go\n";
  std::this_thread::sleep_for(7s);  // over twice the 3 s lease: the node is declared lost
  sched_->process().Signal(SIGCONT);
  ASSERT_TRUE(WaitFor([&] { return State(job) == "succeeded"; }, 60s)) << Job(job).dump(2);
  std::this_thread::sleep_for(3s);  // a second run would have started by now
  std::ifstream runs(shared_ + "/runs");
  int count = 0;
  for (std::string line; std::getline(runs, line);) ++count;
  EXPECT_EQ(count, 1) << Job(job).dump(2);
  EXPECT_EQ(State(job), "succeeded");
  ExpectInvariants();
}

}  // namespace
}  // namespace frugal::testing
