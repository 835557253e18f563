// The cost ledger end to end: jobs run on local workers (the scheduler's local provider),
// one of them is reclaimed on spot, its lost work is the unsaved run since its last
// checkpoint, and the reports over HTTP and `frugal cost` add up: teams = sum of jobs = sum
// of pools, to the micro-dollar; each role sees what it may.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <sstream>
#include <thread>

#include "common/clock.h"
#include "scheduler/store/cost_store.h"
#include "tests/testing/invariants.h"
#include "tests/testing/local_fleet.h"
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

std::int64_t UsOf(const json& rfc3339) {
  auto t = ParseRfc3339(rfc3339.get<std::string>());
  EXPECT_TRUE(t.ok()) << rfc3339;
  return t.ok() ? std::chrono::duration_cast<std::chrono::microseconds>(t->time_since_epoch())
                      .count()
                : 0;
}

// A job's lost work as the ledger must price it: for each attempt that ended preempted, its
// pool's price (spot $0.90, od $3.60 per GPU-hour) of its GPUs from its last checkpoint (its
// start without one) to its end, by the ledger's F.
std::int64_t ExpectedLost(const json& timeline) {
  std::int64_t lost = 0;
  for (const auto& a : timeline["attempts"]) {
    if (a["end_reason"] != "preempted") continue;
    const std::int64_t start = UsOf(a["started_at"]), end = UsOf(a["ended_at"]);
    std::int64_t from = start;
    for (const auto& c : timeline["checkpoints"])
      if (c["attempt_id"] == a["id"]) from = std::max(from, UsOf(c["created_at"]));
    const std::int64_t rate = a["pool"] == "spot" ? 900'000 : 3'600'000;
    lost += store::IntervalCostMicros(a["gpus"].get<int>(), rate, start, std::min(from, end), end);
  }
  return lost;
}

TEST(CostE2eTest, ReportsAddUpAndRespectRoles) {
  // The spot pool may grow by a node, as a cloud's spot group replaces a reclaimed instance:
  // a fixed spot pool with no live node is capacity the policy waits for (decision 0014),
  // and the notice below never takes the node away.
  LocalFleet cluster("max_nodes: 2");
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
  const std::int64_t victim = cluster.ReclaimSpotUnderACheckpointedJob(jobs);
  ASSERT_NE(victim, 0) << "no job ran on spot with a checkpoint to reclaim";
  ASSERT_TRUE(cluster.AllSucceed(jobs, std::chrono::seconds(120))) << sched.process().Stderr();

  // The reclaim happened: the victim's spot attempt ended preempted after a checkpoint, and a
  // later attempt finished the job.
  auto victim_tl = sched.Call("GET", "/v1/jobs/" + std::to_string(victim) + "/timeline", admin);
  ASSERT_EQ(victim_tl.status, 200) << victim_tl.raw;
  const json* reclaimed = nullptr;
  for (const auto& a : victim_tl.body["attempts"])
    if (a["end_reason"] == "preempted") reclaimed = &a;
  ASSERT_NE(reclaimed, nullptr) << victim_tl.body.dump(2);
  EXPECT_EQ((*reclaimed)["pool"], "spot");
  EXPECT_LT((*reclaimed)["number"], victim_tl.body["attempts"].back()["number"]);
  // It checkpointed on that attempt; the last checkpoint (train.sh saves one on the notice's
  // SIGTERM) came before the end, by less than the 2 s grace plus a heartbeat or two.
  std::int64_t last_checkpoint = 0;
  for (const auto& c : victim_tl.body["checkpoints"])
    if (c["attempt_id"] == (*reclaimed)["id"])
      last_checkpoint = std::max(last_checkpoint, UsOf(c["created_at"]));
  ASSERT_NE(last_checkpoint, 0) << victim_tl.body.dump(2);
  const std::int64_t unsaved_us = UsOf((*reclaimed)["ended_at"]) - last_checkpoint;
  EXPECT_GT(unsaved_us, 0) << victim_tl.body.dump(2);
  EXPECT_LT(unsaved_us, 5'000'000) << victim_tl.body.dump(2);
  // Its lost work is that unsaved run on spot, priced to the micro-dollar, not the attempt's
  // whole run: less than the attempt's cost (the checkpoints saved the rest). The amount is
  // a few micro-dollars (4 ms of one spot GPU is one), so it may round down to 0: the exact
  // figure is what is checked.
  const std::int64_t victim_lost = (*reclaimed)["lost_micros"].get<std::int64_t>();
  EXPECT_EQ(victim_lost,
            store::IntervalCostMicros((*reclaimed)["gpus"].get<int>(), 900'000,
                                      UsOf((*reclaimed)["started_at"]), last_checkpoint,
                                      UsOf((*reclaimed)["ended_at"])))
      << victim_tl.body.dump(2);
  EXPECT_EQ(victim_tl.body["wasted_micros"].get<std::int64_t>(), ExpectedLost(victim_tl.body));
  EXPECT_LT(victim_lost, (*reclaimed)["cost_micros"].get<std::int64_t>());
  // The report by job wastes exactly what each job's timeline lost (the reclaimed node may
  // have run a second job), and its total is their sum.
  auto by_job = sched.Call("GET", "/v1/reports/cost?by=job", admin);
  ASSERT_EQ(by_job.status, 200) << by_job.raw;
  std::int64_t wasted = 0;
  for (auto id : jobs) {
    auto tl = sched.Call("GET", "/v1/jobs/" + std::to_string(id) + "/timeline", admin);
    ASSERT_EQ(tl.status, 200) << tl.raw;
    const std::int64_t expected = ExpectedLost(tl.body);
    EXPECT_EQ(tl.body["wasted_micros"].get<std::int64_t>(), expected) << id;
    int rows = 0;
    for (const auto& r : by_job.body["rows"]) {
      if (r["key"] != std::to_string(id)) continue;
      ++rows;
      EXPECT_EQ(r["wasted_micros"].get<std::int64_t>(), expected) << id;
    }
    EXPECT_EQ(rows, 1) << id;
    wasted += expected;
  }
  EXPECT_GE(wasted, victim_lost);
  EXPECT_EQ(by_job.body["total"]["wasted_micros"].get<std::int64_t>(), wasted);

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
