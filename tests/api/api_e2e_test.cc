// The REST API end to end: the real frugal-scheduler over real HTTP, with its embedded
// PostgreSQL (or, for the outage test, a cluster the test owns and stops). Covers
// idempotent submit, team isolation and roles, authentication, token secrecy, database
// outages, the job lifecycle with list filters and paging, and a clean SIGTERM restart.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <set>
#include <thread>

#include "common/crypto.h"
#include "scheduler/store/pg/pg_server.h"
#include "scheduler/store/pg/migrations.h"
#include "scheduler/store/pg/pg_conn.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Polls `done` every 100 ms until it holds or `limit` passes; never a timed assertion.
json JobBody(const std::string& name, json extra = json::object()) {
  json body = {{"name", name}, {"command", {"python", "train.py"}}, {"gpus", 1}};
  body.update(extra);
  return body;
}

std::string JobPath(std::int64_t id) { return "/v1/jobs/" + std::to_string(id); }

std::vector<std::int64_t> Ids(const json& jobs) {
  std::vector<std::int64_t> out;
  for (const auto& j : jobs) out.push_back(j["id"].get<std::int64_t>());
  return out;
}

// Every row of every table of the public schema, as text (query_to_xml keeps it one query).
std::string DumpPublicSchema(store::PgConn& conn, std::set<std::string>& tables) {
  auto r = conn.Exec("dump",
                     "SELECT table_name::text, query_to_xml(format('SELECT * FROM public.%I',"
                     " table_name), true, false, '')::text FROM information_schema.tables"
                     " WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return "";
  std::string dump;
  for (int i = 0; i < r->rows(); ++i) {
    tables.insert(r->Text(i, 0));
    dump += r->Text(i, 1);
  }
  return dump;
}

// One scheduler for the tests that need nothing special; each test uses its own teams, so
// tests never see each other's jobs. Debug logging, so the secrecy test covers every line.
class ApiE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SchedulerProcess::Options o;
    o.log_level = "debug";
    sched_ = new SchedulerProcess(o);
  }
  static void TearDownTestSuite() {
    delete sched_;
    sched_ = nullptr;
  }
  static HttpResult Call(const std::string& method, const std::string& path,
                         const std::string& token, const std::string& body = "",
                         const std::map<std::string, std::string>& headers = {}) {
    return sched_->Call(method, path, token, body, headers);
  }
  static std::int64_t Submit(const std::string& token, const json& body) {
    auto r = Call("POST", "/v1/jobs", token, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.body.is_object() ? r.body.value("id", std::int64_t{0}) : 0;
  }

  static SchedulerProcess* sched_;
};
SchedulerProcess* ApiE2eTest::sched_ = nullptr;

TEST_F(ApiE2eTest, IdempotencyKeyReturnsTheFirstJobAndRejectsADifferentBody) {
  const std::string alice = sched_->NewToken("idem-a", "alice");
  const json body = JobBody("once", {{"gpus", 2}, {"labels", {{"exp", "a"}}}});
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "run-42"}};
  // a. First use of the key creates the job.
  auto first = Call("POST", "/v1/jobs", alice, body.dump(), key);
  ASSERT_EQ(first.status, 201) << first.raw;
  const auto id = first.body["id"].get<std::int64_t>();
  // b. A retry with the same body (keys reordered, spaces added: same JSON) gets that job.
  auto retry = Call("POST", "/v1/jobs", alice,
                    R"({ "labels": {"exp": "a"}, "gpus": 2, "command": ["python", "train.py"],)"
                    R"( "name": "once" })",
                    key);
  EXPECT_EQ(retry.status, 200) << retry.raw;
  EXPECT_EQ(retry.body["id"], id);
  EXPECT_EQ(retry.body["gpus"], 2);
  // c. The same key with another body is a conflict, not a second job.
  auto changed = Call("POST", "/v1/jobs", alice, JobBody("once", {{"gpus", 3}}).dump(), key);
  EXPECT_EQ(changed.status, 409) << changed.raw;
  EXPECT_EQ(changed.body["error"]["code"], "conflict");
  auto list = Call("GET", "/v1/jobs", alice);
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(Ids(list.body["jobs"]), std::vector<std::int64_t>{id});
  // d. Keys belong to a team: another team's identical request is its own job.
  const std::string bob = sched_->NewToken("idem-b", "bob");
  auto other = Call("POST", "/v1/jobs", bob, body.dump(), key);
  EXPECT_EQ(other.status, 201) << other.raw;
  EXPECT_NE(other.body["id"], id);
}

TEST_F(ApiE2eTest, TeamsAndRolesAreIsolated) {
  const std::string alice = sched_->NewToken("iso-a", "alice");
  const std::string bob = sched_->NewToken("iso-b", "bob");
  const std::string worker = sched_->NewToken("iso-infra", "node-1", "worker");
  const auto id = Submit(alice, JobBody("private"));
  // a. Another team's researcher cannot see or cancel the job: 404, as if it did not exist.
  auto get = Call("GET", JobPath(id), bob);
  EXPECT_EQ(get.status, 404) << get.raw;
  EXPECT_EQ(get.body["error"]["code"], "not_found");
  auto cancel = Call("POST", JobPath(id) + "/cancel", bob);
  EXPECT_EQ(cancel.status, 404) << cancel.raw;
  EXPECT_TRUE(Ids(Call("GET", "/v1/jobs", bob).body["jobs"]).empty());
  EXPECT_EQ(Call("GET", JobPath(id), alice).body["state"], "pending");  // the cancel did nothing
  EXPECT_EQ(Call("GET", JobPath(id), sched_->admin_token()).status, 200);
  // b. Admin routes are for admins only.
  const std::string pool = R"({"name":"sneaky","capacity_kind":"spot","gpu_type":"a100",)"
                           R"("gpu_mem_gb":80,"max_gpus":8,"price_per_gpu_hour":"0.01"})";
  const std::vector<std::pair<std::string, std::string>> admin_routes = {
      {"GET", "/v1/admin/teams"},
      {"POST", "/v1/admin/teams"},
      {"POST", "/v1/admin/tokens"},
      {"GET", "/v1/admin/pools"},
      {"POST", "/v1/admin/pools"}};
  for (const auto& token : {alice, worker}) {
    for (const auto& [method, path] : admin_routes) {
      const std::string body = path == "/v1/admin/pools" ? pool
                               : path == "/v1/admin/teams"
                                   ? R"({"name":"sneaky"})"
                                   : R"({"team":"iso-b","user":"mallory","role":"admin"})";
      auto r = Call(method, path, token, method == "POST" ? body : "");
      EXPECT_EQ(r.status, 403) << method << " " << path << ": " << r.raw;
      EXPECT_EQ(r.body["error"]["code"], "permission_denied") << r.raw;
    }
  }
  EXPECT_EQ(
      Call("GET", "/v1/admin/pools", sched_->admin_token()).body["pools"].dump().find("sneaky"),
      std::string::npos);
  EXPECT_EQ(
      Call("GET", "/v1/admin/teams", sched_->admin_token()).body["teams"].dump().find("sneaky"),
      std::string::npos);
  // c. A worker token may only call worker routes.
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/v1/jobs"}, {"POST", "/v1/jobs"}, {"GET", JobPath(id)}}) {
    auto r = Call(method, path, worker, method == "POST" ? JobBody("w").dump() : "");
    EXPECT_EQ(r.status, 403) << method << " " << path << ": " << r.raw;
  }
}

TEST_F(ApiE2eTest, MissingWrongOrMalformedCredentialsAre401) {
  const std::string valid = sched_->NewToken("auth", "ann");
  const std::vector<std::map<std::string, std::string>> cases = {
      {},                                                         // no Authorization header
      {{"Authorization", "Bearer frg_" + std::string(43, 'x')}},  // well-formed, unknown
      {{"Authorization", "Bearer"}},
      {{"Authorization", "Bearer "}},
      {{"Authorization", "Basic xyz"}},
      {{"Authorization", valid}},  // the token without its scheme
      {{"Authorization", "Bearer " + valid + "x"}}};
  for (const auto& headers : cases) {
    const std::string shown = headers.empty() ? "(none)" : headers.begin()->second;
    for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
             {"GET", "/v1/jobs"}, {"POST", "/v1/jobs"}, {"GET", "/v1/admin/teams"}}) {
      auto r = Call(method, path, "", method == "POST" ? JobBody("x").dump() : "", headers);
      EXPECT_EQ(r.status, 401) << shown << " " << method << " " << path << ": " << r.raw;
      EXPECT_EQ(r.body["error"]["code"], "unauthenticated") << r.raw;
      EXPECT_EQ(r.headers.count("WWW-Authenticate"), 1u) << shown;
    }
  }
  EXPECT_EQ(Call("GET", "/v1/jobs", valid).status, 200);
  EXPECT_TRUE(Call("GET", "/v1/jobs", valid).body["jobs"].empty());  // no 401 created a job
}

TEST_F(ApiE2eTest, PlaintextTokensNeverReachTheDatabaseOrTheLogs) {
  const std::string researcher = sched_->NewToken("secret", "sam");
  const std::string worker = sched_->NewToken("secret", "node-9", "worker");
  // a. Use every token: authenticate, submit, list, and a refused call.
  ASSERT_EQ(Call("GET", "/v1/whoami", researcher).status, 200);
  Submit(researcher, JobBody("secret-job"));
  ASSERT_EQ(Call("GET", "/v1/jobs", researcher).status, 200);
  ASSERT_EQ(Call("GET", "/v1/jobs", worker).status, 403);
  ASSERT_EQ(Call("GET", "/v1/admin/teams", sched_->admin_token()).status, 200);
  // b. Dump the whole schema and all output: the scheduler's and its PostgreSQL server's.
  auto conn = store::PgConn::Connect("host=" + sched_->state_dir() +
                                     "/pg/run port=5432 user=frugal dbname=frugal");
  ASSERT_TRUE(conn.ok()) << conn.status().ToString();
  std::set<std::string> tables;
  const std::string dump = DumpPublicSchema(**conn, tables);
  EXPECT_TRUE(tables.count("api_tokens") && tables.count("jobs")) << dump.substr(0, 500);
  const std::string logs = sched_->process().Stdout() + sched_->process().Stderr() +
                           ReadFile(sched_->state_dir() + "/pg/data/server.log");
  EXPECT_NE(logs.find("http_request"), std::string::npos) << "debug logging was not on";
  for (const std::string& token : {researcher, worker, sched_->admin_token()}) {
    ASSERT_GT(token.size(), 20u);
    // The random part alone too, in case something strips the "frg_" prefix.
    for (const std::string& secret : {token, token.substr(4)}) {
      EXPECT_EQ(dump.find(secret), std::string::npos) << "token found in the database";
      EXPECT_EQ(logs.find(secret), std::string::npos) << "token found in the logs";
    }
    // c. What is stored is the token's SHA-256, exactly once.
    const std::string hash = Sha256Hex(token);
    auto r =
        (*conn)->Exec("hash", "SELECT count(*) FROM api_tokens WHERE token_sha256 = $1", {hash});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->Int(0, 0), 1) << "no api_tokens row holds " << hash;
    EXPECT_NE(dump.find(hash), std::string::npos);
  }
}

TEST_F(ApiE2eTest, LifecycleFiltersPagingAndCancel) {
  const std::string alice = sched_->NewToken("life", "alice");
  const std::string bob = sched_->NewToken("life", "bob");
  // a. Five jobs of alice (labels a, b, a, b, a) and one of bob, all pending.
  std::vector<std::int64_t> mine;
  for (int i = 0; i < 5; ++i) {
    mine.push_back(Submit(
        alice, JobBody("job-" + std::to_string(i), {{"labels", {{"exp", i % 2 ? "b" : "a"}}}})));
  }
  const auto bobs = Submit(bob, JobBody("bobs"));
  auto got = Call("GET", JobPath(mine[0]), alice);
  ASSERT_EQ(got.status, 200) << got.raw;
  EXPECT_EQ(got.body["state"], "pending");
  EXPECT_EQ(got.body["user"], "alice");
  EXPECT_EQ(got.body["team"], "life");
  EXPECT_EQ(got.body["labels"], json({{"exp", "a"}}));
  EXPECT_TRUE(got.body["attempt_history"].empty());
  EXPECT_FALSE(got.body["events"].empty());  // at least "submitted"
  // b. Cancel a pending job: it ends at once; a second cancel is a conflict.
  auto cancelled = Call("POST", JobPath(mine[1]) + "/cancel", alice);
  ASSERT_EQ(cancelled.status, 200) << cancelled.raw;
  EXPECT_EQ(cancelled.body["state"], "cancelled");
  EXPECT_EQ(Call("GET", JobPath(mine[1]), alice).body["state"], "cancelled");
  auto again = Call("POST", JobPath(mine[1]) + "/cancel", alice);
  EXPECT_EQ(again.status, 409) << again.raw;
  EXPECT_EQ(again.body["error"]["code"], "conflict");
  // c. Filters, newest first.
  auto list = [&](const std::string& query) {
    auto r = Call("GET", "/v1/jobs?" + query, alice);
    EXPECT_EQ(r.status, 200) << query << ": " << r.raw;
    return r.body.is_object() ? Ids(r.body["jobs"]) : std::vector<std::int64_t>{};
  };
  using V = std::vector<std::int64_t>;
  EXPECT_EQ(list("state=pending"), (V{bobs, mine[4], mine[3], mine[2], mine[0]}));
  EXPECT_EQ(list("state=cancelled"), (V{mine[1]}));
  EXPECT_EQ(list("label=exp=a"), (V{mine[4], mine[2], mine[0]}));
  EXPECT_EQ(list("label=exp%3Db&state=pending"), (V{mine[3]}));
  EXPECT_EQ(list("user=bob"), (V{bobs}));
  EXPECT_EQ(list("user=alice&state=running"), V{});
  // d. Pages of 2 over alice's 5 jobs: 2 + 2 + 1, each job exactly once, newest first.
  V paged;
  std::string cursor;
  int pages = 0;
  do {
    auto r = Call(
        "GET", "/v1/jobs?user=alice&limit=2" + (cursor.empty() ? "" : "&cursor=" + cursor), alice);
    ASSERT_EQ(r.status, 200) << r.raw;
    ASSERT_LE(r.body["jobs"].size(), 2u);
    for (auto id : Ids(r.body["jobs"])) paged.push_back(id);
    cursor = r.body["next_cursor"].is_null() ? "" : r.body["next_cursor"].get<std::string>();
    ASSERT_LT(++pages, 10) << "paging does not end";
  } while (!cursor.empty());
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(paged, (V{mine[4], mine[3], mine[2], mine[1], mine[0]}));
}

// The database goes away under a running scheduler and comes back: the API says 503 with
// Retry-After meanwhile, the process survives, and it recovers without a restart.
TEST(ApiOutageTest, PostgresOutageIs503AndRecoversWithoutRestart) {
  TempDir dir("frugal-outage");
  store::PgServer cluster({dir.path() + "/pg", 5432, /*fast_unsafe=*/true});
  ASSERT_TRUE(cluster.Start().ok());
  ASSERT_TRUE(store::EnsureDatabase(cluster.ConnString("postgres"), "frugal").ok());
  SchedulerProcess::Options o;
  o.database_url = cluster.ConnString("frugal");
  o.extra_args = {"--cycle-interval", "1s"};
  SchedulerProcess sched(o);  // declared after `cluster`: stopped before it
  const std::string token = sched.NewToken("ops", "olga");
  auto before = sched.Call("POST", "/v1/jobs", token, JobBody("before").dump());
  ASSERT_EQ(before.status, 201) << before.raw;
  // a. Stop PostgreSQL. Requests that need it answer 503 with Retry-After.
  ASSERT_TRUE(cluster.Stop().ok());
  HttpResult r;
  ASSERT_TRUE(WaitFor([&] { return (r = sched.Call("GET", "/v1/jobs", token)).status == 503; },
                      std::chrono::seconds(30)))
      << "last answer: " << r.status << " " << r.raw;
  EXPECT_EQ(r.headers.count("Retry-After"), 1u);
  EXPECT_EQ(r.body["error"]["code"], "unavailable");
  EXPECT_FALSE(r.body["error"]["message"].get<std::string>().empty());
  auto submit = sched.Call("POST", "/v1/jobs", token, JobBody("during").dump());
  EXPECT_EQ(submit.status, 503) << submit.raw;
  EXPECT_EQ(submit.headers.count("Retry-After"), 1u);
  EXPECT_EQ(sched.Call("GET", "/readyz", "").status, 503);
  // b. The engine's cycles fail too (it logs so); the process keeps serving.
  ASSERT_TRUE(
      WaitFor([&] { return sched.process().Stderr().find("cycle_failed") != std::string::npos; },
              std::chrono::seconds(30)))
      << sched.process().Stderr();
  EXPECT_FALSE(sched.process().Wait(std::chrono::milliseconds(0))) << "scheduler exited";
  EXPECT_EQ(sched.Call("GET", "/healthz", "").status, 200);
  // c. Start PostgreSQL again: the same process answers normally.
  ASSERT_TRUE(cluster.Start().ok());
  ASSERT_TRUE(WaitFor([&] { return (r = sched.Call("GET", "/v1/jobs", token)).status == 200; },
                      std::chrono::seconds(30)))
      << "last answer: " << r.status << " " << r.raw;
  EXPECT_EQ(Ids(r.body["jobs"]), std::vector<std::int64_t>{before.body["id"].get<std::int64_t>()});
  auto after = sched.Call("POST", "/v1/jobs", token, JobBody("after").dump());
  EXPECT_EQ(after.status, 201) << after.raw;
  EXPECT_EQ(sched.Call("GET", "/readyz", "").status, 200);
  EXPECT_FALSE(sched.process().Wait(std::chrono::milliseconds(0))) << "scheduler exited";
}

// SIGTERM stops the scheduler and its embedded PostgreSQL cleanly; a new process on the
// same state directory and address has the jobs and tokens of the first.
TEST(ApiShutdownTest, SigtermStopsCleanlyAndARestartKeepsTheJobs) {
  namespace fs = std::filesystem;
  TempDir dir("frugal-restart");
  SchedulerProcess::Options o;
  o.state_dir = dir.path() + "/state";  // ours, so it outlives the first process's temp dir
  o.listen = "127.0.0.1:" + std::to_string(FreePort());
  std::string token, url;
  std::int64_t kept = 0, cancelled = 0;
  {
    SchedulerProcess first(o);
    url = first.url();
    token = first.NewToken("keep", "kim");
    auto submit = [&](const std::string& name) {
      auto r = first.Call("POST", "/v1/jobs", token, JobBody(name).dump());
      EXPECT_EQ(r.status, 201) << r.raw;
      return r.body.is_object() ? r.body.value("id", std::int64_t{0}) : 0;
    };
    kept = submit("kept");
    cancelled = submit("gone");
    ASSERT_EQ(first.Call("POST", JobPath(cancelled) + "/cancel", token).status, 200);
    ASSERT_TRUE(fs::exists(o.state_dir + "/pg/data/postmaster.pid"));
    EXPECT_EQ(first.Stop(), 0) << first.process().Stderr();
    EXPECT_FALSE(fs::exists(o.state_dir + "/pg/data/postmaster.pid"))
        << "the embedded PostgreSQL still runs after SIGTERM";
    EXPECT_FALSE(fs::exists(o.state_dir + "/pg/run/.s.PGSQL.5432"));
  }
  o.bootstrap = false;
  SchedulerProcess second(o);
  EXPECT_EQ(second.url(), url);
  auto a = second.Call("GET", JobPath(kept), token);  // the old token still works
  ASSERT_EQ(a.status, 200) << a.raw;
  EXPECT_EQ(a.body["state"], "pending");
  EXPECT_EQ(a.body["name"], "kept");
  EXPECT_EQ(second.Call("GET", JobPath(cancelled), token).body["state"], "cancelled");
  EXPECT_EQ(Ids(second.Call("GET", "/v1/jobs", token).body["jobs"]),
            (std::vector<std::int64_t>{cancelled, kept}));
  EXPECT_EQ(second.Stop(), 0) << second.process().Stderr();
}

}  // namespace
}  // namespace frugal::testing
