// The cost ledger end to end: jobs run on local workers (the scheduler's local provider),
// one of them is preempted, and the reports over HTTP and `frugal cost` add up: teams =
// sum of jobs = sum of pools, to the micro-dollar; each role sees what it may.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <thread>

#include "tests/testing/invariants.h"
#include "tests/testing/local_cluster.h"
#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

std::int64_t SumSpend(const json& report) {
  std::int64_t sum = 0;
  for (const auto& r : report["rows"]) sum += r["spend_micros"].get<std::int64_t>();
  return sum;
}

TEST(CostE2eTest, ReportsAddUpAndRespectRoles) {
  // The spot pool may grow by a node, as a cloud's spot group replaces a reclaimed instance:
  // a fixed spot pool with no live node is capacity the policy waits for (decision 0014),
  // and the notice below never takes the node away.
  LocalCluster cluster("max_nodes: 2");
  ASSERT_TRUE(cluster.ok());
  SchedulerProcess& sched = cluster.sched();
  const std::string admin = sched.admin_token();
  const std::string alice = sched.NewToken("vision", "alice");
  const std::string bob = sched.NewToken("speech", "bob");
  const std::string worker = sched.NewToken("infra", "w", "worker");
  std::vector<std::int64_t> jobs;
  for (const auto& [token, steps] : {std::pair{alice, 20}, std::pair{alice, 30},
                                     std::pair{bob, 25}}) {
    jobs.push_back(cluster.SubmitTrain(token, steps));
    ASSERT_NE(jobs.back(), 0);
  }
  // Reclaim whichever spot node runs something, once, to get lost work into the ledger.
  cluster.ReclaimSpotUnderACheckpointedJob(jobs);
  ASSERT_TRUE(cluster.AllSucceed(jobs, std::chrono::seconds(120))) << sched.process().Stderr();

  // Admin: by team, job and pool all sum to the same total, which is positive.
  std::int64_t total = -1;
  for (const char* by : {"team", "job", "pool", "user", "project"}) {
    auto r = sched.Call("GET", std::string("/v1/reports/cost?by=") + by, admin);
    ASSERT_EQ(r.status, 200) << r.raw;
    EXPECT_EQ(SumSpend(r.body), r.body["total"]["spend_micros"].get<std::int64_t>()) << by;
    if (total < 0) total = r.body["total"]["spend_micros"].get<std::int64_t>();
    EXPECT_EQ(r.body["total"]["spend_micros"].get<std::int64_t>(), total) << by;
    EXPECT_FALSE(r.body["pools"].empty());
  }
  EXPECT_GT(total, 0);
  // A researcher sees only their team, and no cluster-wide pool figures.
  auto mine = sched.Call("GET", "/v1/reports/cost?by=team", alice);
  ASSERT_EQ(mine.status, 200) << mine.raw;
  ASSERT_EQ(mine.body["rows"].size(), 1u);
  EXPECT_EQ(mine.body["rows"][0]["key"], "vision");
  EXPECT_TRUE(mine.body["pools"].empty());
  auto theirs = sched.Call("GET", "/v1/reports/cost?by=job", bob);
  ASSERT_EQ(theirs.body["rows"].size(), 1u);
  EXPECT_EQ(theirs.body["rows"][0]["key"], std::to_string(jobs[2]));
  EXPECT_EQ(SumSpend(mine.body) + SumSpend(theirs.body), total);
  // Roles and bad input.
  EXPECT_EQ(sched.Call("GET", "/v1/reports/cost", worker).status, 403);
  EXPECT_EQ(sched.Call("GET", "/v1/reports/cost", "").status, 401);
  auto bad = sched.Call("GET", "/v1/reports/cost?by=planet", admin);
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.body["error"]["field"], "by");
  EXPECT_EQ(sched.Call("GET", "/v1/reports/cost?from=yesterday", admin).body["error"]["field"],
            "from");
  // The CLI's CSV has the same total.
  auto csv = RunCommand({FRUGAL_CLI_BIN, "cost", "--by", "pool", "--output", "csv"},
                        sched.CliEnv(admin));
  ASSERT_EQ(csv.exit_code, 0) << csv.err;
  std::istringstream lines(csv.out);
  std::string line, last;
  while (std::getline(lines, line)) last = line;
  EXPECT_EQ(last.substr(0, 6), "total,") << csv.out;
  // Every ended attempt is billed and everything reconciles.
  const std::string conninfo =
      "host=" + sched.state_dir() + "/pg/run port=5432 user=frugal dbname=frugal";
  for (const auto& p : CheckInvariants(conninfo, jobs)) ADD_FAILURE() << p;
}

}  // namespace
}  // namespace frugal::testing
