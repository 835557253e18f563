// Multi-node gangs end to end (decision 0032): `frugal submit --nodes 2` on the local
// provider's real workers. Both parts start at once on two nodes with one master address
// and port, a reclaim of the spot pool requeues the whole gang, and it resumes, again as a
// whole, on on-demand nodes. Real scheduler, workers, CLI and child processes.
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

// Each part writes what it was told into a directory the parts share (as a job's own
// rendezvous would use the network), waits until every rank of its attempt has arrived,
// checks that all agree on the master, and then works for WORK seconds.
constexpr const char* kRendezvous = R"sh(
set -eu
umask 000  # the parts run as different uids
d="$RV/$FRUGAL_JOB_ID-$FRUGAL_ATTEMPT"
mkdir -p "$d"
echo "$MASTER_ADDR:$MASTER_PORT $NNODES $PET_NODE_RANK $CUDA_VISIBLE_DEVICES" > "$d/rank-$NODE_RANK"
for i in $(seq 1 300); do
  [ "$(ls "$d" | wc -l)" -ge "$NNODES" ] && break
  sleep 0.1
done
[ "$(ls "$d" | wc -l)" -eq "$NNODES" ] || { echo "rendezvous timed out"; exit 2; }
[ "$(cut -d' ' -f1 "$d"/rank-* | sort -u | wc -l)" -eq 1 ] || { echo "masters differ"; exit 3; }
echo "rank $NODE_RANK of $NNODES met at $MASTER_ADDR:$MASTER_PORT"
sleep "$WORK"
)sh";

class GangE2eTest : public ::testing::Test {
 protected:
  void Start(const std::string& yaml) {
    const std::string config = dir_.path() + "/scheduler.yaml";
    std::ofstream(config) << "lease_ttl: 3s\nheartbeat_interval: 1s\ncycle_interval: 1s\n" << yaml;
    SchedulerProcess::Options o;
    o.extra_args = {"--config", config};
    sched_ = std::make_unique<SchedulerProcess>(o);
    user_ = sched_->NewToken("vision", "alice");
    // Jobs run as a uid of their own (worker isolation): the shared directory is theirs.
    fs::create_directories(rv_);
    fs::permissions(dir_.path(), fs::perms::others_exec, fs::perm_options::add);
    fs::permissions(rv_, fs::perms::all | fs::perms::sticky_bit);
  }

  json Job(std::int64_t id) {
    return sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_).body;
  }

  std::string Logs(std::int64_t id) {
    std::string out;
    json r = sched_->Call("GET", "/v1/jobs/" + std::to_string(id) + "/logs", user_).body;
    for (const auto& c : r["chunks"]) out += c["data"].get<std::string>();
    return out;
  }

  // Through the CLI, as a user would: --nodes and --gpus-per-node.
  // A deadline, so that once spot is gone the gang does not wait for it to come back.
  std::int64_t SubmitGang(int nodes, const std::string& work_seconds) {
    auto r = RunCommand({FRUGAL_CLI_BIN, "submit", "--output", "json", "--nodes",
                         std::to_string(nodes), "--gpus-per-node", "1", "--env", "RV=" + rv_,
                         "--env", "WORK=" + work_seconds, "--tolerance", "restartable",
                         "--deadline", "+10m", "--", "bash", "-c", kRendezvous},
                        sched_->CliEnv(user_));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    json j = json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << r.out;
    const std::int64_t id = j.is_object() ? j.value("id", std::int64_t{0}) : 0;
    acknowledged_.push_back(id);
    return id;
  }

  // The rank files of one attempt: rank -> what it was told.
  std::map<int, std::string> Met(std::int64_t job, int attempt) {
    std::map<int, std::string> out;
    const fs::path d = fs::path(rv_) / (std::to_string(job) + "-" + std::to_string(attempt));
    if (!fs::exists(d)) return out;
    for (const auto& e : fs::directory_iterator(d)) {
      std::ifstream in(e.path());
      std::string line;
      std::getline(in, line);
      out[std::stoi(e.path().filename().string().substr(5))] = line;
    }
    return out;
  }

  void ExpectInvariants() {
    const std::string conninfo =
        "host=" + sched_->state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
    for (const auto& p : CheckInvariants(conninfo, acknowledged_)) ADD_FAILURE() << p;
  }

  TempDir dir_{"frugal-gang"};
  std::string rv_ = dir_.path() + "/rv";
  std::unique_ptr<SchedulerProcess> sched_;
  std::string user_;
  std::vector<std::int64_t> acknowledged_;
};

TEST_F(GangE2eTest, AGangStartsWholeAndAReclaimRequeuesAndResumesItWhole) {
  // Spot for the first 15 s of the series, then none until t = 10000 s.
  const std::string trace = dir_.path() + "/trace.csv";
  std::ofstream(trace) << "zone,tick,elapsed_s,timestamp_utc,available,spot_usd_hr\n"
                       << "z1,0,0,,1,0.9\nz1,1,15,,0,0.9\nz1,2,10000,,1,0.9\n";
  Start("local_workers:\n"
        "  - {pool: spot, nodes: 2, grace: 2s, restart_delay: 1s,\n"
        "     preemption: {trace: " + trace + ", zone: z1, speedup: 1}}\n"
        "  - {pool: ondemand, nodes: 2, restart_delay: 1s}\n");
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.00", 8)));
  auto job = SubmitGang(2, "30");  // still running when spot goes at t = 15 s
  ASSERT_TRUE(WaitFor([&] { return Met(job, 1).size() == 2; }, std::chrono::seconds(40)))
      << Job(job).dump(2) << Logs(job);
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("ondemand", "on_demand", "2.00", 8)));
  ASSERT_TRUE(WaitFor([&] { return Job(job)["state"] == "succeeded"; }, std::chrono::seconds(150)))
      << Job(job).dump(2) << sched_->process().Stderr();

  // Attempt 1 met on spot, both ranks told the same master; so did the last attempt.
  const json j = Job(job);
  EXPECT_EQ(j["nodes"], 2);
  EXPECT_EQ(j["gpus"], 2);
  const int last = j["attempt_history"].back()["number"].get<int>();
  EXPECT_GE(last, 2);
  for (int attempt : {1, last}) {
    auto met = Met(job, attempt);
    ASSERT_EQ(met.size(), 2u) << "attempt " << attempt;
    EXPECT_EQ(met[0].substr(0, met[0].find(' ')), met[1].substr(0, met[1].find(' ')));
    EXPECT_NE(met[0].find(" 2 0 "), std::string::npos) << met[0];  // NNODES, PET_NODE_RANK
    EXPECT_NE(met[1].find(" 2 1 "), std::string::npos) << met[1];
  }
  // Every attempt is two parts on two different nodes, the first on spot ended by the
  // reclaim (never as a failure), the last on on-demand succeeded in both parts.
  std::map<int, std::set<std::string>> nodes_of;
  std::map<int, std::set<int>> ranks_of;
  for (const auto& a : j["attempt_history"]) {
    const int n = a["number"].get<int>();
    nodes_of[n].insert(a["node"].get<std::string>());
    ranks_of[n].insert(a["rank"].get<int>());
    if (n == 1) {
      EXPECT_EQ(a["pool"], "spot") << a.dump();
      EXPECT_TRUE(a["end_reason"] == "preempted" || a["end_reason"] == "node_lost") << a.dump();
    }
    if (n == last) {
      EXPECT_EQ(a["pool"], "ondemand") << a.dump();
      EXPECT_EQ(a["end_reason"], "succeeded") << a.dump();
    }
  }
  for (const auto& [n, nodes] : nodes_of) {
    EXPECT_EQ(nodes.size(), 2u) << "attempt " << n;
    EXPECT_EQ(ranks_of[n], (std::set<int>{0, 1})) << "attempt " << n;
  }
  ExpectInvariants();
}

TEST_F(GangE2eTest, AGangLargerThanThePoolWaitsAndSaysWhy) {
  Start("local_workers:\n  - {pool: od, nodes: 2, restart_delay: 1s}\n");
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("od", "on_demand", "1.00", 8)));
  auto job = SubmitGang(3, "1");
  ASSERT_TRUE(WaitFor([&] { return Job(job)["reason"] != ""; }, std::chrono::seconds(20)));
  // A few cycles later it still has not started in part.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const json j = Job(job);
  EXPECT_EQ(j["state"], "pending") << j.dump(2);
  EXPECT_TRUE(j["attempt_history"].empty()) << j.dump(2);
  EXPECT_TRUE(Met(job, 1).empty());
  ASSERT_EQ(sched_->Call("POST", "/v1/jobs/" + std::to_string(job) + "/cancel", user_).status, 200);
  ExpectInvariants();
}

}  // namespace
}  // namespace frugal::testing
