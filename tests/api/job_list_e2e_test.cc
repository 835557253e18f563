// GET /v1/jobs carries each job's timeline in short (pool, cost, wasted), so the dashboard's
// Jobs page needs one request, not one timeline per row. On a real scheduler, with this test
// speaking the worker protocol over HTTP: a job preempted once then succeeding, a job
// running, a job never placed. Each list item must say what GET /v1/jobs/{id}/timeline and
// the cost report say for the same job, to the micro-dollar, on every page and for every
// role, through the CLI too, and conform to docs/openapi.yaml.
#include <gtest/gtest.h>

#include <map>

#include <sstream>

#include "tests/api/openapi_spec.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

std::int64_t Micros(const json& v) { return v.get<std::int64_t>(); }

// The fields GET /v1/jobs adds to a job (its other fields, e.g. a waiting job's reason, may
// change between two reads).
json Summary(const json& item) {
  json out = json::object();
  for (const char* k : {"pool", "cost", "cost_micros", "wasted", "wasted_micros"})
    out[k] = item.is_object() && item.contains(k) ? item[k] : json("absent");
  return out;
}

// The item for `id` in a GET /v1/jobs reply, or null.
json ItemOf(const json& list, std::int64_t id) {
  for (const auto& j : list["jobs"])
    if (j["id"] == id) return j;
  return nullptr;
}

class JobListE2eTest : public ::testing::Test {
 protected:
  // A worker on node `jl-node` (4 GPUs of pool jl-od on demand, at $36/GPU-hour so that
  // even a millisecond's attempt costs whole micro-dollars).
  void SetUp() override {
    ASSERT_TRUE(CreatePool(sched_, PoolBody("jl-od", "on_demand", "36.00", 8,
                                            {{"gpu_type", "jl-gpu"}})));
    worker_ = sched_.NewToken("jl-workers", "jl-node", "worker");
    auto reg = sched_.Call("POST", "/v1/workers/register", worker_,
                           json{{"node", "jl-node"}, {"pool", "jl-od"}, {"gpus", 4},
                                {"gpu_type", "jl-gpu"}, {"gpu_mem_gb", 80}}.dump());
    ASSERT_EQ(reg.status, 200) << reg.raw;
    epoch_ = reg.body["lease_epoch"].get<std::int64_t>();
    worker_ = reg.body["node_credential"].get<std::string>();  // the node speaks with it
  }

  // Heartbeats until the scheduler hands this node an attempt; its id, or 0.
  std::int64_t NextAttempt(std::vector<std::int64_t> running) {
    std::int64_t attempt = 0;
    WaitFor([&] {
      auto hb = sched_.Call("POST", "/v1/workers/heartbeat", worker_,
                            json{{"node", "jl-node"}, {"lease_epoch", epoch_},
                                 {"running", running}}.dump());
      if (hb.status != 200 || hb.body["assignments"].empty()) return false;
      attempt = hb.body["assignments"][0]["attempt_id"].get<std::int64_t>();
      fences_[attempt] = hb.body["assignments"][0]["fence"].get<std::string>();
      return true;
    }, std::chrono::seconds(30));
    return attempt;
  }

  int Finish(std::int64_t attempt, const std::string& outcome) {
    return sched_.Call("POST", "/v1/workers/attempts/" + std::to_string(attempt) + "/finish",
                       worker_, json{{"lease_epoch", epoch_}, {"fence", fences_[attempt]},
                                    {"outcome", outcome}}.dump())
        .status;
  }

  std::int64_t Submit(const std::string& token, const json& body) {
    auto r = sched_.Call("POST", "/v1/jobs", token, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.status == 201 ? r.body["id"].get<std::int64_t>() : 0;
  }

  json Timeline(std::int64_t id, const std::string& token) {
    auto r = sched_.Call("GET", "/v1/jobs/" + std::to_string(id) + "/timeline", token);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body;
  }

  SchedulerProcess sched_;
  std::string worker_;
  std::int64_t epoch_ = 0;
  std::map<std::int64_t, std::string> fences_;  // by attempt id, from the assignments
};

TEST_F(JobListE2eTest, EachJobCarriesWhatItsTimelineAndTheCostReportSay) {
  const std::string alice = sched_.NewToken("jl-vision", "alice");
  const std::string bob = sched_.NewToken("jl-speech", "bob");
  const json runnable = {{"command", {"train"}}, {"gpus", 2}, {"gpu_types", {"jl-gpu"}}};
  // a. Job A: its first attempt is preempted (all of it is lost work), the second runs.
  const std::int64_t a = Submit(alice, runnable);
  const std::int64_t first = NextAttempt({});
  ASSERT_NE(first, 0);
  ASSERT_EQ(Finish(first, "preempted"), 200);
  const std::int64_t second = NextAttempt({});
  ASSERT_NE(second, 0);
  ASSERT_NE(second, first);
  // b. While it runs, its cost grows with time: the list's figure lies between two
  //    timelines read before and after it.
  const json before = Timeline(a, alice);
  auto listed = sched_.Call("GET", "/v1/jobs", alice);
  ASSERT_EQ(listed.status, 200) << listed.raw;
  const json after = Timeline(a, alice);
  json item = ItemOf(listed.body, a);
  ASSERT_TRUE(item.is_object()) << listed.raw;
  EXPECT_EQ(item["state"], "running");
  EXPECT_EQ(item["pool"], "jl-od");
  EXPECT_LE(Micros(before["cost_micros"]), Micros(item["cost_micros"]));
  EXPECT_LE(Micros(item["cost_micros"]), Micros(after["cost_micros"]));
  EXPECT_GT(Micros(item["wasted_micros"]), 0) << "the preempted attempt's work was lost";
  EXPECT_EQ(item["wasted_micros"], after["wasted_micros"]);
  // c. Job A ends; job B can never be placed (no such GPU type).
  ASSERT_EQ(Finish(second, "succeeded"), 200);
  const std::int64_t b = Submit(alice, {{"command", {"train"}}, {"gpu_types", {"none-such"}}});

  // d. Ended, its figures are fixed: the list says what the timeline and the cost report by
  //    job say, to the micro-dollar.
  listed = sched_.Call("GET", "/v1/jobs", alice);
  ASSERT_EQ(listed.status, 200) << listed.raw;
  item = ItemOf(listed.body, a);
  const json timeline = Timeline(a, alice);
  EXPECT_EQ(item["state"], "succeeded");
  EXPECT_EQ(item["pool"], timeline["attempts"].back()["pool"]);
  EXPECT_EQ(item["cost_micros"], timeline["cost_micros"]);
  EXPECT_EQ(item["cost"], timeline["cost"]);
  EXPECT_EQ(item["wasted_micros"], timeline["wasted_micros"]);
  EXPECT_EQ(item["wasted"], timeline["wasted"]);
  EXPECT_GT(Micros(item["cost_micros"]), Micros(item["wasted_micros"]));
  auto report = sched_.Call("GET", "/v1/reports/cost?by=job", alice);
  ASSERT_EQ(report.status, 200) << report.raw;
  bool reported = false;
  for (const auto& row : report.body["rows"]) {
    if (row["key"] != std::to_string(a)) continue;
    reported = true;
    EXPECT_EQ(row["spend_micros"], item["cost_micros"]);
    EXPECT_EQ(row["wasted_micros"], item["wasted_micros"]);
  }
  EXPECT_TRUE(reported) << report.raw;
  // Never placed: no pool, no money, as its (empty) timeline.
  const json never = ItemOf(listed.body, b);
  ASSERT_TRUE(never.is_object()) << listed.raw;
  EXPECT_TRUE(never["pool"].is_null());
  EXPECT_EQ(Micros(never["cost_micros"]), 0);
  EXPECT_EQ(never["cost_micros"], Timeline(b, alice)["cost_micros"]);
  EXPECT_EQ(Micros(never["wasted_micros"]), 0);

  // e. The same figures on every page (one job a page), and for the admin; nothing of
  //    alice's team for bob.
  auto page1 = sched_.Call("GET", "/v1/jobs?limit=1&team=jl-vision", sched_.admin_token());
  ASSERT_EQ(page1.status, 200) << page1.raw;
  ASSERT_EQ(page1.body["jobs"].size(), 1u);
  EXPECT_EQ(Summary(page1.body["jobs"][0]), Summary(never));
  auto page2 = sched_.Call("GET", "/v1/jobs?limit=1&team=jl-vision&cursor=" +
                                      page1.body["next_cursor"].get<std::string>(),
                                  sched_.admin_token());
  ASSERT_EQ(page2.status, 200) << page2.raw;
  ASSERT_EQ(page2.body["jobs"].size(), 1u);
  EXPECT_EQ(Summary(page2.body["jobs"][0]), Summary(item));
  auto others = sched_.Call("GET", "/v1/jobs", bob);
  ASSERT_EQ(others.status, 200) << others.raw;
  EXPECT_TRUE(others.body["jobs"].empty()) << others.raw;

  // f. The reply is what docs/openapi.yaml says (JobListItem, no field it does not name).
  const json spec = LoadOpenApi(ReadFile(std::string(FRUGAL_SOURCE_DIR) + "/docs/openapi.yaml"));
  EXPECT_EQ(SchemaViolation(spec, ResponseSchema(spec, "get", "/v1/jobs", 200), listed.body), "");

  // g. The CLI lists the same jobs: its JSON carries the figures, its table still renders.
  auto cli_json = RunCommand({FRUGAL_CLI_BIN, "list", "--output", "json"}, sched_.CliEnv(alice));
  ASSERT_EQ(cli_json.exit_code, 0) << cli_json.err;
  EXPECT_EQ(Summary(ItemOf(json::parse(cli_json.out), a)), Summary(item));
  auto table = RunCommand({FRUGAL_CLI_BIN, "list"}, sched_.CliEnv(alice));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  // The table's row for A names its pool and its cost as the API spells it.
  std::string row_a;
  std::istringstream lines(table.out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(std::to_string(a) + " ", 0) == 0) row_a = line;
  ASSERT_FALSE(row_a.empty()) << table.out;
  EXPECT_NE(row_a.find("jl-od"), std::string::npos) << table.out;
  EXPECT_NE(row_a.find(item["cost"].get<std::string>()), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("POOL"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("COST $"), std::string::npos) << table.out;
  auto status = RunCommand({FRUGAL_CLI_BIN, "status", std::to_string(a)}, sched_.CliEnv(alice));
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("succeeded"), std::string::npos) << status.out;
}

}  // namespace
}  // namespace frugal::testing
