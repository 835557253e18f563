// The dashboard's JSON views end to end (GET /v1/overview, /v1/jobs/{id}/timeline,
// /v1/reports/cost/series) and its static files, on a real scheduler with local workers:
// jobs run, one is preempted on spot and recovers, and the views agree with the cost
// report to the micro-dollar and show each role only what it may see.
#include <gtest/gtest.h>

#include <map>

#include "tests/testing/local_fleet.h"
#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

std::int64_t Micros(const json& v) { return v.get<std::int64_t>(); }

// Key -> spend over every bucket of a series.
std::map<std::string, std::int64_t> SeriesByKey(const json& series) {
  std::map<std::string, std::int64_t> out;
  for (const auto& b : series["buckets"])
    for (const auto& r : b["rows"]) out[r["key"]] += Micros(r["spend_micros"]);
  return out;
}

std::map<std::string, std::int64_t> ReportByKey(const json& report) {
  std::map<std::string, std::int64_t> out;
  for (const auto& r : report["rows"]) out[r["key"]] = Micros(r["spend_micros"]);
  return out;
}

TEST(DashboardE2eTest, ViewsAgreeWithTheLedgerAndRespectRoles) {
  LocalFleet cluster("nodes: 2");
  ASSERT_TRUE(cluster.ok());
  SchedulerProcess& sched = cluster.sched();
  const std::string admin = sched.admin_token();
  const std::string alice = sched.NewToken("vision", "alice");
  const std::string bob = sched.NewToken("speech", "bob");
  std::vector<std::pair<std::int64_t, std::string>> jobs;  // id, owner's token
  std::vector<std::int64_t> ids;
  for (const auto& [token, steps] : {std::pair{alice, 30}, std::pair{bob, 20}}) {
    ids.push_back(cluster.SubmitTrain(token, steps));
    ASSERT_NE(ids.back(), 0);
    jobs.emplace_back(ids.back(), token);
  }
  // a. Reclaim the spot node under the first checkpointed job, once.
  const std::int64_t victim = cluster.ReclaimSpotUnderACheckpointedJob(ids);
  ASSERT_NE(victim, 0);
  ASSERT_TRUE(cluster.AllSucceed(ids, std::chrono::seconds(120))) << sched.process().Stderr();

  // b. Timelines: attempts and cost as the job detail and the cost report by job say.
  const json by_job = sched.Call("GET", "/v1/reports/cost?by=job", admin).body;
  for (const auto& [id, token] : jobs) {
    const std::string path = "/v1/jobs/" + std::to_string(id);
    auto t = sched.Call("GET", path + "/timeline", token);
    ASSERT_EQ(t.status, 200) << t.raw;
    const json detail = sched.Call("GET", path, token).body;
    EXPECT_EQ(t.body["attempts"].size(), detail["attempt_history"].size());
    EXPECT_FALSE(t.body["checkpoints"].empty());
    std::int64_t sum = 0;
    for (const auto& a : t.body["attempts"]) sum += Micros(a["cost_micros"]);
    EXPECT_EQ(sum, Micros(t.body["cost_micros"]));
    EXPECT_EQ(Micros(t.body["cost_micros"]), ReportByKey(by_job)[std::to_string(id)]) << id;
  }
  const std::string victim_path = "/v1/jobs/" + std::to_string(victim) + "/timeline";
  EXPECT_GE(sched.Call("GET", victim_path, admin).body["attempts"].size(), 2u);
  EXPECT_EQ(sched.Call("GET", victim_path, victim == jobs[0].first ? bob : alice).status, 404);

  // c. Overview: the preemption and its recovery; pools' GPUs add up; each team its own.
  auto all = sched.Call("GET", "/v1/overview", admin);
  ASSERT_EQ(all.status, 200) << all.raw;
  bool found = false;
  for (const auto& x : all.body["interruptions"]) {
    if (x["job"] != victim) continue;
    found = true;
    EXPECT_EQ(x["pool"], "spot");
    EXPECT_EQ(x["reason"], "preempted");
    EXPECT_EQ(x["next_attempt"], x["attempt"].get<int>() + 1);
  }
  EXPECT_TRUE(found) << all.raw;
  ASSERT_EQ(all.body["pools"].size(), 2u);
  for (const auto& p : all.body["pools"])
    EXPECT_EQ(Micros(p["busy_gpus"]) + Micros(p["idle_paid_gpus"]) + Micros(p["free_gpus"]),
              Micros(p["max_gpus"])) << p;
  for (const auto& [token, team] : {std::pair{alice, "vision"}, std::pair{bob, "speech"}}) {
    json mine = sched.Call("GET", "/v1/overview", token).body;
    EXPECT_EQ(mine["pools"].size(), 2u);
    for (const auto& x : mine["interruptions"]) EXPECT_EQ(x["team"], team);
    for (const auto& q : mine["queue"]) EXPECT_EQ(q["team"], team);
  }

  // d. Series: the buckets add up to the cost report, per key and in total, for each role.
  for (const auto& [token, by] : {std::pair{admin, "team"}, std::pair{admin, "pool"},
                                  std::pair{alice, "team"}, std::pair{bob, "pool"}}) {
    const std::string q = std::string("?by=") + by;
    auto series = sched.Call("GET", "/v1/reports/cost/series" + q + "&buckets=7", token);
    ASSERT_EQ(series.status, 200) << series.raw;
    ASSERT_EQ(series.body["buckets"].size(), 7u);
    // The same window as the series, so running and later work cannot differ.
    const json report = sched.Call("GET", "/v1/reports/cost" + q + "&from=" +
                                              series.body["from"].get<std::string>() + "&to=" +
                                              series.body["to"].get<std::string>(), token).body;
    EXPECT_EQ(SeriesByKey(series.body), ReportByKey(report)) << by;
    std::int64_t sum = 0;
    for (const auto& b : series.body["buckets"]) sum += Micros(b["spend_micros"]);
    EXPECT_EQ(sum, Micros(report["total"]["spend_micros"])) << by;
    EXPECT_EQ(sum, Micros(series.body["total"]["spend_micros"])) << by;
    EXPECT_GT(sum, 0) << by;
  }
  for (const char* bad : {"buckets=0", "buckets=97", "buckets=x", "by=job", "colour=red"}) {
    auto r = sched.Call("GET", std::string("/v1/reports/cost/series?") + bad, admin);
    EXPECT_EQ(r.status, 400) << bad << " " << r.raw;
    EXPECT_FALSE(r.body["error"]["field"].is_null()) << bad;
  }
  EXPECT_EQ(sched.Call("GET", "/v1/overview", "").status, 401);

  // e. The static files, without a token.
  auto index = sched.Call("GET", "/", "");
  EXPECT_EQ(index.status, 200);
  EXPECT_NE(index.raw.find("<title>Frugal</title>"), std::string::npos);
  auto js = sched.Call("GET", "/web/app.js", "");
  EXPECT_EQ(js.status, 200);
  EXPECT_NE(js.raw.find("sessionStorage"), std::string::npos);
  EXPECT_EQ(sched.Call("GET", "/web/missing.js", "").status, 404);
}

}  // namespace
}  // namespace frugal::testing
