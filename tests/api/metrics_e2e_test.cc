// GET /metrics and GET /openapi.yaml of a real frugal-scheduler: who may read the metrics,
// that the text parses strictly, that its figures match what the API says about the same
// database, and that real responses conform to docs/openapi.yaml's schemas.
#include <gtest/gtest.h>

#include <cmath>

#include "tests/api/openapi_spec.h"
#include "tests/api/prom_text.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

class MetricsE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sched_ = new SchedulerProcess();
    spec_ = new json(LoadOpenApi(ReadFile(std::string(FRUGAL_SOURCE_DIR) + "/docs/openapi.yaml")));
  }
  static void TearDownTestSuite() {
    delete sched_;
    delete spec_;
    sched_ = nullptr;
    spec_ = nullptr;
  }

  static PromExposition Scrape() {
    auto r = sched_->Call("GET", "/metrics", sched_->admin_token());
    EXPECT_EQ(r.status, 200) << r.raw;
    auto parsed = ParsePromText(r.raw);
    EXPECT_TRUE(parsed.ok()) << parsed.status().ToString() << "\n" << r.raw;
    return parsed.ok() ? *parsed : PromExposition{};
  }

  // The reply conforms to the schema docs/openapi.yaml gives for (method, path, status).
  static void ExpectConforms(const std::string& method, const std::string& path,
                             const HttpResult& r) {
    json schema;
    try {
      schema = ResponseSchema(*spec_, method, path, r.status);
    } catch (const std::exception&) {
      ADD_FAILURE() << method << " " << path << " " << r.status << " is not in the document";
      return;
    }
    EXPECT_EQ(SchemaViolation(*spec_, schema, r.body), "")
        << method << " " << path << " " << r.status << ": " << r.raw.substr(0, 600);
  }

  static int CountJobs(const std::string& team, const std::string& state) {
    auto r = sched_->Call("GET", "/v1/jobs?limit=500&team=" + team + "&state=" + state,
                          sched_->admin_token());
    EXPECT_EQ(r.status, 200) << r.raw;
    return static_cast<int>(r.body["jobs"].size());
  }

  static SchedulerProcess* sched_;
  static json* spec_;
};
SchedulerProcess* MetricsE2eTest::sched_ = nullptr;
json* MetricsE2eTest::spec_ = nullptr;

TEST_F(MetricsE2eTest, OnlyAdminAndMetricsTokensReadMetrics) {
  // a. The metrics token comes from the CLI, as an operator would make it.
  sched_->Call("POST", "/v1/admin/teams", sched_->admin_token(), json{{"name", "ops"}}.dump());
  auto made = RunCommand({FRUGAL_CLI_BIN, "admin", "token", "create", "--team", "ops", "--user",
                          "prometheus", "--role", "metrics"},
                         sched_->CliEnv(sched_->admin_token()));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  std::string metrics_token = made.out;
  while (!metrics_token.empty() && metrics_token.back() == '\n') metrics_token.pop_back();
  const std::string researcher = sched_->NewToken("rbac", "alice");
  const std::string worker = sched_->NewToken("rbac", "node-1", "worker");
  // b. Who may read it.
  EXPECT_EQ(sched_->Call("GET", "/metrics", "").status, 401);
  EXPECT_EQ(sched_->Call("GET", "/metrics", researcher).status, 403);
  EXPECT_EQ(sched_->Call("GET", "/metrics", worker).status, 403);
  auto admin = sched_->Call("GET", "/metrics", sched_->admin_token());
  EXPECT_EQ(admin.status, 200);
  auto scraper = sched_->Call("GET", "/metrics", metrics_token);
  EXPECT_EQ(scraper.status, 200) << scraper.raw;
  auto type = scraper.headers.find("Content-Type");
  ASSERT_NE(type, scraper.headers.end());
  EXPECT_EQ(type->second, "text/plain; version=0.0.4; charset=utf-8");
  // c. A metrics token reads nothing else.
  EXPECT_EQ(sched_->Call("GET", "/v1/jobs", metrics_token).status, 403);
  EXPECT_EQ(sched_->Call("POST", "/v1/jobs", metrics_token, json{{"command", {"x"}}}.dump()).status,
            403);
  EXPECT_EQ(sched_->Call("GET", "/v1/admin/teams", metrics_token).status, 403);
  EXPECT_EQ(sched_->Call("POST", "/v1/workers/register", metrics_token, "{}").status, 403);
  auto who = sched_->Call("GET", "/v1/whoami", metrics_token);
  EXPECT_EQ(who.body["role"], "metrics");
  ExpectConforms("get", "/v1/whoami", who);
  ExpectConforms("get", "/metrics", sched_->Call("GET", "/metrics", researcher));
}

TEST_F(MetricsE2eTest, ParsesStrictlyWithEveryFamilyTyped) {
  sched_->Call("GET", "/healthz", "");
  // The engine's first cycle runs at start; wait for it to be counted.
  ASSERT_TRUE(WaitFor([] { return Scrape().Sum("frugal_scheduling_cycles_total") > 0; },
                      std::chrono::seconds(30)));
  const PromExposition m = Scrape();
  const std::map<std::string, std::string> expected = {
      {"frugal_queue_jobs", "gauge"},
      {"frugal_jobs_submitted_total", "counter"},
      {"frugal_jobs_finished_total", "counter"},
      {"frugal_attempts_started_total", "counter"},
      {"frugal_attempts_ended_total", "counter"},
      {"frugal_preemptions_total", "counter"},
      {"frugal_idle_stops_total", "counter"},
      {"frugal_pool_max_gpus", "gauge"},
      {"frugal_pool_allocated_gpus", "gauge"},
      {"frugal_pool_busy_gpus", "gauge"},
      {"frugal_pool_nodes", "gauge"},
      {"frugal_spend_dollars_total", "counter"},
      {"frugal_wasted_dollars_total", "counter"},
      {"frugal_spend_rate_dollars_per_hour", "gauge"},
      {"frugal_database_up", "gauge"},
      {"frugal_database_errors_total", "counter"},
      {"frugal_scheduling_cycle_duration_seconds", "histogram"},
      {"frugal_scheduling_cycles_total", "counter"},
      {"frugal_scheduler_leader", "gauge"},
      {"frugal_is_leader", "gauge"},
      {"frugal_leader_term", "gauge"},
      {"frugal_http_request_duration_seconds", "histogram"},
  };
  for (const auto& [name, type] : expected) {
    ASSERT_TRUE(m.Has(name)) << name;
    EXPECT_EQ(m.families.at(name).type, type) << name;
  }
  for (const auto& [name, f] : m.families) {
    EXPECT_EQ(name.rfind("frugal_", 0), 0u) << name;
    if (f.type == "counter") {
      EXPECT_EQ(name.substr(name.size() - 6), "_total") << name;
    }
  }
  EXPECT_EQ(m.Sum("frugal_database_up"), 1);
  EXPECT_EQ(m.Sum("frugal_scheduler_leader"), 1);
  EXPECT_EQ(m.Sum("frugal_is_leader"), 1);
  EXPECT_GE(m.Sum("frugal_leader_term"), 1);  // the only scheduler took the first term
  EXPECT_GT(m.Sum("frugal_scheduling_cycle_duration_seconds_count"), 0);
  EXPECT_EQ(m.Sum("frugal_database_errors_total"), 0);
}

TEST_F(MetricsE2eTest, QueueAndJobCountersMatchTheApi) {
  // a. Four jobs of team mq that can never be placed (no such GPU), one of them high
  //    priority; one normal one cancelled.
  const std::string token = sched_->NewToken("mq", "bob");
  std::vector<std::int64_t> ids;
  for (const char* priority : {"normal", "normal", "normal", "high"}) {
    auto r = sched_->Call("POST", "/v1/jobs", token,
                          json{{"command", {"sleep", "1"}}, {"gpu_types", {"nonexistent"}},
                               {"priority", priority}}.dump());
    ASSERT_EQ(r.status, 201) << r.raw;
    ExpectConforms("post", "/v1/jobs", r);
    ids.push_back(r.body["id"].get<std::int64_t>());
  }
  auto cancelled = sched_->Call("POST", "/v1/jobs/" + std::to_string(ids[0]) + "/cancel", token);
  ASSERT_EQ(cancelled.status, 200) << cancelled.raw;
  ExpectConforms("post", "/v1/jobs/{id}/cancel", cancelled);
  // b. The gauges and counters say what GET /v1/jobs says: 3 pending (2 normal + 1 high),
  //    4 submitted, 1 finished as cancelled.
  const PromExposition m = Scrape();
  for (const char* state : {"pending", "held", "running"}) {
    EXPECT_EQ(m.Sum("frugal_queue_jobs", {{"team", "mq"}, {"state", state}}),
              CountJobs("mq", state))
        << state;
  }
  EXPECT_EQ(m.Sum("frugal_queue_jobs", {{"team", "mq"}, {"state", "pending"}}), 3);
  EXPECT_EQ(m.Sum("frugal_queue_jobs", {{"team", "mq"}, {"priority", "high"}}), 1);
  EXPECT_EQ(m.Sum("frugal_jobs_submitted_total", {{"team", "mq"}}), 4);
  EXPECT_EQ(m.Sum("frugal_jobs_finished_total", {{"team", "mq"}, {"state", "cancelled"}}),
            CountJobs("mq", "cancelled"));
  EXPECT_EQ(m.Sum("frugal_jobs_finished_total", {{"team", "mq"}}), 1);
  // c. Latency is labelled by route pattern: a job id never becomes a label.
  auto detail = sched_->Call("GET", "/v1/jobs/" + std::to_string(ids[1]), token);
  ExpectConforms("get", "/v1/jobs/{id}", detail);
  ExpectConforms("get", "/v1/jobs/{id}/why",
                 sched_->Call("GET", "/v1/jobs/" + std::to_string(ids[1]) + "/why", token));
  ExpectConforms("get", "/v1/jobs", sched_->Call("GET", "/v1/jobs?team=mq", token));
  ExpectConforms("get", "/v1/jobs/{id}/logs",
                 sched_->Call("GET", "/v1/jobs/" + std::to_string(ids[1]) + "/logs", token));
  ExpectConforms("get", "/v1/jobs/{id}", sched_->Call("GET", "/v1/jobs/999999", token));
  const PromExposition after = Scrape();
  EXPECT_GE(after.Sum("frugal_http_request_duration_seconds_count",
                      {{"method", "GET"}, {"route", "/v1/jobs/{id}"}, {"status", "200"}}),
            1);
  for (const auto& s : after.families.at("frugal_http_request_duration_seconds").samples) {
    EXPECT_TRUE(spec_->at("paths").contains(s.labels.at("route"))) << s.labels.at("route");
  }
}

TEST_F(MetricsE2eTest, PoolAttemptAndSpendFiguresFollowAnAttempt) {
  // a. A reserved pool at $2.00/GPU-hour, one 4-GPU node of it, and a 2-GPU job for it.
  const std::string admin = sched_->admin_token();
  auto pool = sched_->Call("POST", "/v1/admin/pools", admin,
                           PoolBody("m-pool", "reserved", "2.00", 8, {{"gpu_type", "m-gpu"}}).dump());
  ASSERT_EQ(pool.status, 200) << pool.raw;
  ExpectConforms("post", "/v1/admin/pools", pool);
  const std::string join = sched_->NewToken("mw", "m-node-1", "worker");
  auto reg = sched_->Call("POST", "/v1/workers/register", join,
                          json{{"node", "m-node-1"}, {"pool", "m-pool"}, {"gpus", 4},
                               {"gpu_type", "m-gpu"}, {"gpu_mem_gb", 80}}.dump());
  ASSERT_EQ(reg.status, 200) << reg.raw;
  ExpectConforms("post", "/v1/workers/register", reg);
  const std::int64_t epoch = reg.body["lease_epoch"].get<std::int64_t>();
  const std::string worker = reg.body["node_credential"].get<std::string>();
  const std::string token = sched_->NewToken("mw", "carol");
  EXPECT_EQ(Scrape().Sum("frugal_pool_nodes", {{"pool", "m-pool"}, {"state", "idle"}}), 1);
  auto job = sched_->Call("POST", "/v1/jobs", token,
                          json{{"command", {"train"}}, {"gpus", 2}, {"gpu_types", {"m-gpu"}}}.dump());
  ASSERT_EQ(job.status, 201) << job.raw;
  // b. Placed: 2 busy GPUs of 4 allocated, one attempt started, $4.00/hour running.
  ASSERT_TRUE(WaitFor([] { return Scrape().Sum("frugal_pool_busy_gpus", {{"pool", "m-pool"}}) == 2; },
                      std::chrono::seconds(30)));
  PromExposition m = Scrape();
  EXPECT_EQ(m.Sum("frugal_pool_allocated_gpus", {{"pool", "m-pool"}}), 4);
  EXPECT_EQ(m.Sum("frugal_pool_max_gpus", {{"pool", "m-pool"}, {"capacity_kind", "reserved"}}), 8);
  EXPECT_EQ(m.Sum("frugal_pool_nodes", {{"pool", "m-pool"}, {"state", "live"}}), 1);
  EXPECT_EQ(m.Sum("frugal_pool_nodes", {{"pool", "m-pool"}, {"state", "idle"}}), 0);
  EXPECT_EQ(m.Sum("frugal_attempts_started_total", {{"pool", "m-pool"}}), 1);
  EXPECT_EQ(m.Sum("frugal_queue_jobs", {{"team", "mw"}, {"state", "running"}}), 1);
  EXPECT_EQ(m.Sum("frugal_spend_rate_dollars_per_hour", {{"team", "mw"}, {"pool", "m-pool"}}), 4);
  // c. The worker takes the attempt, drains (no new work here), and reports it preempted.
  auto hb = sched_->Call("POST", "/v1/workers/heartbeat", worker,
                         json{{"node", "m-node-1"}, {"lease_epoch", epoch}}.dump());
  ASSERT_EQ(hb.status, 200) << hb.raw;
  ExpectConforms("post", "/v1/workers/heartbeat", hb);
  ASSERT_EQ(hb.body["assignments"].size(), 1u) << hb.raw;
  const std::int64_t attempt = hb.body["assignments"][0]["attempt_id"].get<std::int64_t>();
  const std::string fence = hb.body["assignments"][0]["fence"].get<std::string>();
  auto drain = sched_->Call("POST", "/v1/workers/heartbeat", worker,
                            json{{"node", "m-node-1"}, {"lease_epoch", epoch},
                                 {"running", {attempt}}, {"draining", true}}.dump());
  ASSERT_EQ(drain.status, 200) << drain.raw;
  const std::string attempt_path = "/v1/workers/attempts/" + std::to_string(attempt);
  auto logs = sched_->Call("POST", attempt_path + "/logs", worker,
                           json{{"lease_epoch", epoch}, {"fence", fence}, {"data", "step 1\n"}}.dump());
  ExpectConforms("post", "/v1/workers/attempts/{id}/logs", logs);
  auto finish = sched_->Call("POST", attempt_path + "/finish", worker,
                             json{{"lease_epoch", epoch}, {"fence", fence}, {"outcome", "preempted"}}.dump());
  ASSERT_EQ(finish.status, 200) << finish.raw;
  ExpectConforms("post", "/v1/workers/attempts/{id}/finish", finish);
  // d. One preemption caused by the node, nothing busy, and the spend counter equals the
  //    cost report's (nothing runs any more, so both are the ledger's sum).
  m = Scrape();
  EXPECT_EQ(m.Sum("frugal_attempts_ended_total", {{"pool", "m-pool"}, {"reason", "preempted"}}), 1);
  EXPECT_EQ(m.Sum("frugal_preemptions_total", {{"pool", "m-pool"}, {"cause", "node"}}), 1);
  EXPECT_EQ(m.Sum("frugal_pool_busy_gpus", {{"pool", "m-pool"}}), 0);
  EXPECT_EQ(m.Sum("frugal_pool_nodes", {{"pool", "m-pool"}, {"state", "draining"}}), 1);
  EXPECT_EQ(m.Sum("frugal_spend_rate_dollars_per_hour", {{"pool", "m-pool"}}), 0);
  auto cost = sched_->Call("GET", "/v1/reports/cost?by=pool", admin);
  ASSERT_EQ(cost.status, 200) << cost.raw;
  ExpectConforms("get", "/v1/reports/cost", cost);
  double reported = 0;
  for (const auto& row : cost.body["rows"])
    if (row["key"] == "m-pool") reported = row["spend_micros"].get<double>() / 1e6;
  EXPECT_GT(reported, 0);
  EXPECT_NEAR(m.Sum("frugal_spend_dollars_total", {{"pool", "m-pool"}}), reported, 1e-9);
}

TEST_F(MetricsE2eTest, ServesItsOpenApiDocumentToAnyone) {
  auto r = sched_->Call("GET", "/openapi.yaml", "");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.raw, ReadFile(std::string(FRUGAL_SOURCE_DIR) + "/docs/openapi.yaml"));
  auto type = r.headers.find("Content-Type");
  ASSERT_NE(type, r.headers.end());
  EXPECT_EQ(type->second, "application/yaml");
}

TEST_F(MetricsE2eTest, AdminAndErrorRepliesConformToTheDocument) {
  const std::string admin = sched_->admin_token();
  ExpectConforms("get", "/healthz", sched_->Call("GET", "/healthz", ""));
  ExpectConforms("get", "/readyz", sched_->Call("GET", "/readyz", ""));
  ExpectConforms("post", "/v1/admin/teams",
                 sched_->Call("POST", "/v1/admin/teams", admin, json{{"name", "doc"}}.dump()));
  ExpectConforms("post", "/v1/admin/teams",
                 sched_->Call("POST", "/v1/admin/teams", admin, json{{"name", "doc"}}.dump()));
  ExpectConforms("get", "/v1/admin/teams", sched_->Call("GET", "/v1/admin/teams", admin));
  ExpectConforms("get", "/v1/admin/pools", sched_->Call("GET", "/v1/admin/pools", admin));
  ExpectConforms("post", "/v1/admin/tokens",
                 sched_->Call("POST", "/v1/admin/tokens", admin,
                              json{{"team", "doc"}, {"user", "u"}, {"role", "researcher"}}.dump()));
  ExpectConforms("post", "/v1/admin/teams/{team}/quota",
                 sched_->Call("POST", "/v1/admin/teams/doc/quota", admin,
                              json{{"spot_gpus", 4}}.dump()));
  ExpectConforms("get", "/v1/admin/teams/{team}/quota",
                 sched_->Call("GET", "/v1/admin/teams/doc/quota", admin));
  ExpectConforms("post", "/v1/jobs",
                 sched_->Call("POST", "/v1/jobs?dry_run=true", admin,
                              json{{"command", {"x"}}, {"estimate_seconds", 60}}.dump()));
  ExpectConforms("post", "/v1/jobs", sched_->Call("POST", "/v1/jobs", admin, "{\"gpus\":0}"));
  ExpectConforms("get", "/v1/jobs", sched_->Call("GET", "/v1/jobs", "nope"));
}

}  // namespace
}  // namespace frugal::testing
