// Malformed requests against the real scheduler, table-driven: each must get its exact 4xx
// status and an error body {"error":{"code","message","field"}} naming the offending field,
// never a 5xx. One scheduler serves the whole table; afterwards it must still be healthy.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <thread>

#include "common/clock.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

enum class Who { kResearcher, kAdmin, kWorker };

struct Case {
  std::string name;
  std::string method;
  std::string path;
  Who who;
  std::string body;
  int status;
  std::string field;  // empty: error.field must be null
  std::map<std::string, std::string> headers = {};
};

// POST /v1/jobs as the researcher: most of the table.
Case Submit(std::string name, std::string body, int status, std::string field,
            std::map<std::string, std::string> headers = {}) {
  return {std::move(name), "POST", "/v1/jobs",       Who::kResearcher,
          std::move(body), status, std::move(field), std::move(headers)};
}

const char* CodeFor(int status) {
  switch (status) {
    case 400:
      return "invalid_argument";
    case 403:
      return "permission_denied";
    case 404:
      return "not_found";
    case 409:
      return "conflict";
    case 413:
      return "payload_too_large";
    case 422:
      return "failed_precondition";
  }
  return "?";
}

// A valid body with `patch` merged over it (RFC 7386: a null value removes the field).
std::string Patched(json body, const json& patch) {
  body.merge_patch(patch);
  return body.dump();
}
std::string Job(const json& patch) {
  return Patched({{"command", {"python", "train.py"}}, {"gpus", 1}}, patch);
}
std::string Pool(const json& patch) {
  return Patched({{"name", "p2"},
                  {"capacity_kind", "spot"},
                  {"gpu_type", "a100"},
                  {"gpu_mem_gb", 80},
                  {"max_gpus", 8},
                  {"price_per_gpu_hour", "1.00"}},
                 patch);
}
std::string Register(const json& patch) {
  return Patched({{"node", "ghost"},
                  {"pool", "mal-pool"},
                  {"gpus", 1},
                  {"gpu_type", "a100"},
                  {"gpu_mem_gb", 80}},
                 patch);
}

// Runtime values the table refers to; filled by the suite's setup.
struct World {
  std::int64_t job = 0;      // a pending job of the researcher's team
  std::int64_t attempt = 0;  // an active attempt on node "node-m", with checkpoint step 5
  std::int64_t epoch = 0;    // node-m's current lease epoch
  std::string fence;         // the attempt's fence
  std::string credential;    // node-m's node credential
};

std::vector<Case> Table(const World& w) {
  const std::string soon =
      FormatRfc3339(std::chrono::system_clock::now() + std::chrono::minutes(1));
  const std::string job = "/v1/jobs/" + std::to_string(w.job);
  const std::string att = "/v1/workers/attempts/" + std::to_string(w.attempt);
  const std::string f = R"(,"fence":")" + w.fence + "\"";
  const std::string ep = std::to_string(w.epoch);
  const auto R = Who::kResearcher, A = Who::kAdmin, W = Who::kWorker;
  return {
      // Submit: syntax.
      Submit("bad json", R"({"command": [)", 400, ""),
      Submit("trailing garbage", R"({"command":["x"]} xyz)", 400, ""),
      Submit("not an object", R"(["x"])", 400, ""),
      Submit("empty body", "", 400, ""),
      Submit("invalid utf-8", "{\"command\":[\"\xff\"]}", 400, ""),
      Submit("nested too deep",
             R"({"command":["x"],"env":)" + std::string(40, '[') + std::string(40, ']') + "}", 400,
             ""),
      Submit("body too large", Job({{"name", std::string(1 << 20, 'a')}}), 413, ""),
      Submit("form-encoded over 8 KiB", Job({{"name", std::string(9000, 'a')}}), 413, "",
             {{"Content-Type", "application/x-www-form-urlencoded"}}),
      Submit("multipart without boundary", Job(json::object()), 400, "",
             {{"Content-Type", "multipart/form-data"}}),
      // Submit: fields.
      Submit("unknown field", Job({{"gpu", 2}}), 400, "gpu"),
      Submit("command missing", Job({{"command", nullptr}}), 400, "command"),
      Submit("command a string", Job({{"command", "echo hi"}}), 400, "command"),
      Submit("command empty", Job({{"command", json::array()}}), 400, "command"),
      Submit("command[0] empty", Job({{"command", {""}}}), 400, "command"),
      Submit("command item a number", Job({{"command", {"x", 1}}}), 400, "command[1]"),
      Submit("command with NUL", R"({"command":["a\u0000b"]})", 400, "command[0]"),
      Submit("gpus zero", Job({{"gpus", 0}}), 400, "gpus"),
      Submit("gpus negative", Job({{"gpus", -1}}), 400, "gpus"),
      Submit("gpus 1025", Job({{"gpus", 1025}}), 400, "gpus"),
      Submit("gpus uint64 max", R"({"command":["x"],"gpus":18446744073709551615})", 400, "gpus"),
      Submit("gpus beyond uint64", R"({"command":["x"],"gpus":1e30})", 400, "gpus"),
      Submit("gpus a string", Job({{"gpus", "2"}}), 400, "gpus"),
      Submit("gpus fractional", Job({{"gpus", 1.5}}), 400, "gpus"),
      Submit("gpu_types and min_gpu_mem_gb", Job({{"gpu_types", {"a100"}}, {"min_gpu_mem_gb", 40}}),
             400, "min_gpu_mem_gb"),
      Submit("gpu_types empty item", Job({{"gpu_types", {""}}}), 400, "gpu_types[0]"),
      Submit("min_gpu_mem_gb zero", Job({{"min_gpu_mem_gb", 0}}), 400, "min_gpu_mem_gb"),
      Submit("priority unknown", Job({{"priority", "urgent"}}), 400, "priority"),
      Submit("priority a number", Job({{"priority", 1}}), 400, "priority"),
      Submit("tolerance unknown", Job({{"tolerance", "sometimes"}}), 400, "tolerance"),
      Submit("deadline past", Job({{"deadline", "2020-01-01T00:00:00Z"}}), 422, "deadline"),
      Submit("deadline before estimate", Job({{"deadline", soon}, {"estimate_seconds", 3600}}), 422,
             "deadline"),
      Submit("deadline not RFC 3339", Job({{"deadline", "tomorrow"}}), 400, "deadline"),
      Submit("deadline month 13", Job({{"deadline", "2099-13-01T00:00:00Z"}}), 400, "deadline"),
      Submit("deadline a number", Job({{"deadline", 4102444800}}), 400, "deadline"),
      Submit("estimate zero", Job({{"estimate_seconds", 0}}), 400, "estimate_seconds"),
      Submit("max_runtime below estimate",
             Job({{"estimate_seconds", 600}, {"max_runtime_seconds", 60}}), 400,
             "max_runtime_seconds"),
      Submit("env key starts with digit", Job({{"env", {{"1BAD", "x"}}}}), 400, "env.1BAD"),
      Submit("env key with dash", Job({{"env", {{"A-B", "x"}}}}), 400, "env.A-B"),
      Submit("env value a number", Job({{"env", {{"K", 1}}}}), 400, "env.K"),
      // The field quotes the key cut to 64 characters.
      Submit("env very long key", Job({{"env", {{std::string(100000, 'K'), "v"}}}}), 400,
             "env." + std::string(64, 'K')),
      Submit("label key upper case", Job({{"labels", {{"Exp", "a"}}}}), 400, "labels.Exp"),
      Submit("label key with space", Job({{"labels", {{"a b", "a"}}}}), 400, "labels.a b"),
      Submit("labels an array", Job({{"labels", {"a"}}}), 400, "labels"),
      Submit("max_attempts zero", Job({{"max_attempts", 0}}), 400, "max_attempts"),
      Submit("max_attempts 101", Job({{"max_attempts", 101}}), 400, "max_attempts"),
      Submit("after unknown job", Job({{"after", {999999999}}}), 422, "after"),
      Submit("after not an array", Job({{"after", 1}}), 400, "after"),
      Submit("after zero", Job({{"after", {0}}}), 400, "after[0]"),
      Submit("name too long", Job({{"name", std::string(129, 'n')}}), 400, "name"),
      Submit("idempotency key too long", Job(json::object()), 400, "Idempotency-Key",
             {{"Idempotency-Key", std::string(256, 'k')}}),
      Submit("idempotency key not UTF-8", Job(json::object()), 400, "Idempotency-Key",
             {{"Idempotency-Key", "\xff\xfe"}}),
      {"query on submit", "POST", "/v1/jobs?dry_run=1", R, Job(json::object()), 400, "dry_run"},
      // Paths.
      {"job id a word", "GET", "/v1/jobs/abc", R, "", 400, "id"},
      {"job id negative", "GET", "/v1/jobs/-1", R, "", 400, "id"},
      {"job id zero", "GET", "/v1/jobs/0", R, "", 400, "id"},
      {"job id 20 digits", "GET", "/v1/jobs/99999999999999999999", R, "", 400, "id"},
      {"job id unknown", "GET", "/v1/jobs/999999999", R, "", 404, ""},
      {"cancel id a word", "POST", "/v1/jobs/abc/cancel", R, "", 400, "id"},
      {"cancel unknown field", "POST", job + "/cancel", R, R"({"force":true})", 400, "force"},
      {"logs after a word", "GET", job + "/logs?after=abc", R, "", 400, "after"},
      {"no such route", "PUT", "/v1/jobs", R, "{}", 404, ""},
      // List queries.
      {"limit zero", "GET", "/v1/jobs?limit=0", R, "", 400, "limit"},
      {"limit a word", "GET", "/v1/jobs?limit=abc", R, "", 400, "limit"},
      {"limit 501", "GET", "/v1/jobs?limit=501", R, "", 400, "limit"},
      {"limit twice", "GET", "/v1/jobs?limit=1&limit=2", R, "", 400, "limit"},
      {"state bogus", "GET", "/v1/jobs?state=bogus", R, "", 400, "state"},
      {"cursor a word", "GET", "/v1/jobs?cursor=abc", R, "", 400, "cursor"},
      {"cursor negative", "GET", "/v1/jobs?cursor=-5", R, "", 400, "cursor"},
      {"unknown parameter", "GET", "/v1/jobs?colour=red", R, "", 400, "colour"},
      {"label without value", "GET", "/v1/jobs?label=exp", R, "", 400, "label"},
      {"label not UTF-8", "GET", "/v1/jobs?label=exp=%FF", R, "", 400, "label"},
      {"label with NUL", "GET", "/v1/jobs?label=exp=%00", R, "", 400, "label"},
      {"team bad name", "GET", "/v1/jobs?team=Bad!", R, "", 400, "team"},
      // Admin.
      {"pool bad capacity_kind", "POST", "/v1/admin/pools", A, Pool({{"capacity_kind", "cheap"}}),
       400, "capacity_kind"},
      {"pool negative price", "POST", "/v1/admin/pools", A, Pool({{"price_per_gpu_hour", "-1.00"}}),
       400, "price_per_gpu_hour"},
      {"pool price a number", "POST", "/v1/admin/pools", A, Pool({{"price_per_gpu_hour", 2.48}}),
       400, "price_per_gpu_hour"},
      {"pool price 7 decimals", "POST", "/v1/admin/pools", A,
       Pool({{"price_per_gpu_hour", "1.0000001"}}), 400, "price_per_gpu_hour"},
      {"pool unknown field", "POST", "/v1/admin/pools", A, Pool({{"region", "eu"}}), 400, "region"},
      {"pool zero memory", "POST", "/v1/admin/pools", A, Pool({{"gpu_mem_gb", 0}}), 400,
       "gpu_mem_gb"},
      {"pool zero speed", "POST", "/v1/admin/pools", A, Pool({{"speed", 0}}), 400, "speed"},
      {"pool gpu_type with NUL", "POST", "/v1/admin/pools", A,
       Pool({{"gpu_type", std::string("a\0", 2)}}), 400, "gpu_type"},
      {"pool without name", "POST", "/v1/admin/pools", A, Pool({{"name", nullptr}}), 400, "name"},
      {"admin team bad name", "POST", "/v1/admin/teams", A, R"({"name":"Bad Name"})", 400, "name"},
      {"token unknown role", "POST", "/v1/admin/tokens", A,
       R"({"team":"mal","user":"x","role":"root"})", 400, "role"},
      {"token unknown team", "POST", "/v1/admin/tokens", A,
       R"({"team":"nope","user":"x","role":"researcher"})", 422, "team"},
      // Worker protocol: registering (an admin may join nodes too), then as node-m with its
      // node credential.
      {"register unknown pool", "POST", "/v1/workers/register", A, Register({{"pool", "nope"}}),
       422, "pool"},
      {"register zero gpus", "POST", "/v1/workers/register", A, Register({{"gpus", 0}}), 400,
       "gpus"},
      {"register bad node", "POST", "/v1/workers/register", A, Register({{"node", "a b"}}), 400,
       "node"},
      {"heartbeat stale epoch", "POST", "/v1/workers/heartbeat", W,
       R"({"node":"node-m","lease_epoch":)" + std::to_string(w.epoch + 1) + "}", 409, ""},
      {"heartbeat another node", "POST", "/v1/workers/heartbeat", W,
       R"({"node":"nobody","lease_epoch":1})", 403, "node"},
      {"heartbeat running words", "POST", "/v1/workers/heartbeat", W,
       R"({"node":"node-m","lease_epoch":)" + ep + R"(,"running":["x"]})", 400, "running"},
      {"heartbeat notice a string", "POST", "/v1/workers/heartbeat", W,
       R"({"node":"node-m","lease_epoch":)" + ep + R"(,"notice":"yes"})", 400, "notice"},
      {"heartbeat gpu reading with NUL", "POST", "/v1/workers/heartbeat", W,
       R"({"node":"node-m","lease_epoch":)" + ep + R"(,"gpus":[{"name":"\u0000"}]})", 400, "gpus"},
      {"checkpoint stale epoch", "POST", att + "/checkpoint", W,
       R"({"lease_epoch":)" + std::to_string(w.epoch + 1) + f + R"(,"step":9,"uri":"file:///c"})", 409,
       ""},
      {"checkpoint unknown attempt", "POST", "/v1/workers/attempts/999999999/checkpoint", W,
       R"({"lease_epoch":)" + ep + f + R"(,"step":9,"uri":"file:///c"})", 403, ""},
      {"checkpoint wrong fence", "POST", att + "/checkpoint", W,
       R"({"lease_epoch":)" + ep + R"(,"fence":")" + std::string(64, '0') +
           R"(","step":9,"uri":"file:///c"})", 409, ""},
      {"checkpoint malformed fence", "POST", att + "/checkpoint", W,
       R"({"lease_epoch":)" + ep + R"(,"fence":"abc","step":9,"uri":"file:///c"})", 400, "fence"},
      {"checkpoint without fence", "POST", att + "/checkpoint", W,
       R"({"lease_epoch":)" + ep + R"(,"step":9,"uri":"file:///c"})", 400, "fence"},
      {"checkpoint step backwards", "POST", att + "/checkpoint", W,
       R"({"lease_epoch":)" + ep + f + R"(,"step":3,"uri":"file:///c"})", 422, "step"},
      {"checkpoint progress 2", "POST", att + "/checkpoint", W,
       R"({"lease_epoch":)" + ep + f + R"(,"step":9,"uri":"file:///c","progress":2})", 400, "progress"},
      {"checkpoint attempt a word", "POST", "/v1/workers/attempts/abc/checkpoint", W,
       R"({"lease_epoch":1,"step":9,"uri":"x"})", 400, "attempt_id"},
      {"logs data with NUL", "POST", att + "/logs", W,
       R"({"lease_epoch":)" + ep + f + R"(,"data":"a\u0000b"})", 400, "data"},
      {"finish stale epoch", "POST", att + "/finish", W,
       R"({"lease_epoch":)" + std::to_string(w.epoch + 1) + f + R"(,"outcome":"succeeded"})", 409, ""},
      {"finish unknown outcome", "POST", att + "/finish", W,
       R"({"lease_epoch":)" + ep + f + R"(,"outcome":"exploded"})", 400, "outcome"},
      {"finish exit code 300", "POST", att + "/finish", W,
       R"({"lease_epoch":)" + ep + f + R"(,"outcome":"failed","exit_code":300})", 400, "exit_code"},
  };
}

class ApiMalformedTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    SchedulerProcess::Options o;
    // Fast cycles to place the setup job; a long lease so node-m stays live all along.
    o.extra_args = {"--cycle-interval", "1s", "--lease-ttl", "600s"};
    sched_ = new SchedulerProcess(o);
  }
  static void TearDownTestSuite() {
    delete sched_;
    sched_ = nullptr;
  }

  // Raw request with any headers: SchedulerProcess::Call always says application/json.
  static HttpResult Send(const Case& c, const std::string& token) {
    httplib::Client cli(sched_->url());
    cli.set_read_timeout(30, 0);
    httplib::Headers h = {{"Authorization", "Bearer " + token}};
    std::string type = "application/json";
    for (const auto& [k, v] : c.headers) {
      if (k == "Content-Type")
        type = v;
      else
        h.emplace(k, v);
    }
    httplib::Result res = c.method == "GET"   ? cli.Get(c.path, h)
                          : c.method == "PUT" ? cli.Put(c.path, h, c.body, type)
                                              : cli.Post(c.path, h, c.body, type);
    HttpResult out;
    if (!res) return out;
    out.status = res->status;
    out.raw = res->body;
    out.body = json::parse(res->body, nullptr, false);
    if (out.body.is_discarded()) out.body = nullptr;
    return out;
  }

  // A pool, a node in it, a job placed there (an active attempt) with a checkpoint at step
  // 5, and a pending job: what the worker and path cases need to be stale or regressive.
  void BuildWorld() {
    researcher_ = sched_->NewToken("mal", "mia");
    worker_ = sched_->NewToken("mal-infra", "node-m", "worker");
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("mal-pool", "spot", "1.00", 1)));
    auto r = sched_->Call(
        "POST", "/v1/workers/register", worker_,
        R"({"node":"node-m","pool":"mal-pool","gpus":1,"gpu_type":"a100","gpu_mem_gb":80})");
    ASSERT_EQ(r.status, 200) << r.raw;
    world_.epoch = r.body["lease_epoch"].get<std::int64_t>();
    // From here on node-m speaks with the credential registration returned.
    world_.credential = r.body["node_credential"].get<std::string>();
    worker_ = world_.credential;
    r = sched_->Call("POST", "/v1/jobs", researcher_, Job({{"name", "placed"}}));
    ASSERT_EQ(r.status, 201) << r.raw;
    const json hb = {{"node", "node-m"}, {"lease_epoch", world_.epoch}};
    const auto end = Clock::now() + std::chrono::seconds(60);
    while (world_.attempt == 0 && Clock::now() < end) {
      r = sched_->Call("POST", "/v1/workers/heartbeat", worker_, hb.dump());
      ASSERT_EQ(r.status, 200) << r.raw;
      if (!r.body["assignments"].empty()) {
        world_.attempt = r.body["assignments"][0]["attempt_id"].get<std::int64_t>();
        world_.fence = r.body["assignments"][0]["fence"].get<std::string>();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ASSERT_NE(world_.attempt, 0) << "the job was never placed on node-m: " << r.raw;
    r = sched_->Call(
        "POST", "/v1/workers/attempts/" + std::to_string(world_.attempt) + "/checkpoint", worker_,
        json{{"lease_epoch", world_.epoch}, {"fence", world_.fence}, {"step", 5},
             {"uri", "file:///c/5"}}.dump());
    ASSERT_EQ(r.status, 200) << r.raw;
    // The node's single GPU is taken, so this one stays pending.
    r = sched_->Call("POST", "/v1/jobs", researcher_, Job({{"name", "pending"}}));
    ASSERT_EQ(r.status, 201) << r.raw;
    world_.job = r.body["id"].get<std::int64_t>();
  }

  static SchedulerProcess* sched_;
  std::string researcher_, worker_;
  World world_;
};
SchedulerProcess* ApiMalformedTest::sched_ = nullptr;

TEST_F(ApiMalformedTest, EveryMalformedRequestGetsAPreciseClientError) {
  ASSERT_NO_FATAL_FAILURE(BuildWorld());
  const auto table = Table(world_);
  ASSERT_GE(table.size(), 30u);
  for (const Case& c : table) {
    SCOPED_TRACE(c.name + ": " + c.method + " " + c.path.substr(0, 80));
    const std::string& token = c.who == Who::kAdmin    ? sched_->admin_token()
                               : c.who == Who::kWorker ? worker_
                                                       : researcher_;
    auto r = Send(c, token);
    ASSERT_NE(r.status, 0) << "no HTTP answer; scheduler stderr:\n" << sched_->process().Stderr();
    EXPECT_LT(r.status, 500) << r.raw;
    EXPECT_EQ(r.status, c.status) << r.raw.substr(0, 400);
    ASSERT_TRUE(r.body.is_object() && r.body.size() == 1 && r.body.contains("error") &&
                r.body["error"].is_object())
        << r.raw.substr(0, 400);
    const json& e = r.body["error"];
    EXPECT_EQ(e.size(), 3u) << e.dump();
    EXPECT_EQ(e.value("code", ""), CodeFor(c.status)) << e.dump();
    ASSERT_TRUE(e.contains("message") && e["message"].is_string()) << e.dump();
    EXPECT_FALSE(e["message"].get<std::string>().empty());
    ASSERT_TRUE(e.contains("field")) << e.dump();
    if (c.field.empty()) {
      EXPECT_TRUE(e["field"].is_null()) << e.dump();
    } else {
      EXPECT_EQ(e["field"], c.field) << e.dump();
    }
  }
  // a. Still alive, still healthy, still accepting work; no malformed submit made a job.
  EXPECT_FALSE(sched_->process().Wait(std::chrono::milliseconds(0))) << "scheduler exited";
  auto health = sched_->Call("GET", "/healthz", "");
  EXPECT_EQ(health.status, 200) << health.raw;
  auto list = sched_->Call("GET", "/v1/jobs", researcher_);
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(list.body["jobs"].size(), 2u) << list.raw.substr(0, 400);
  auto ok = sched_->Call("POST", "/v1/jobs", researcher_, Job({{"name", "after-table"}}));
  EXPECT_EQ(ok.status, 201) << ok.raw;
  // b. The stale reports changed nothing: the attempt is still active on its epoch.
  auto hb = sched_->Call(
      "POST", "/v1/workers/heartbeat", worker_,
      json{{"node", "node-m"}, {"lease_epoch", world_.epoch}, {"running", {world_.attempt}}}
          .dump());
  ASSERT_EQ(hb.status, 200) << hb.raw;
  EXPECT_TRUE(hb.body["stop"].empty()) << hb.raw;
}

}  // namespace
}  // namespace frugal::testing
