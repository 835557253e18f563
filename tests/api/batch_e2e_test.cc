// Batch submit end to end (POST /v1/jobs:batch, `frugal submit --file`): the real
// scheduler over real HTTP. A batch is stored whole or not at all, its jobs are the jobs
// the specs describe, in order, a retry with the same key stores nothing twice, and only
// this route may send more than the 1 MiB every other route takes.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/process.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

json Spec(const std::string& name, json extra = json::object()) {
  json body = {{"name", name}, {"command", {"python", "sweep.py", name}}, {"gpus", 1}};
  body.update(extra);
  return body;
}

class BatchE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sched_ = new SchedulerProcess(); }
  static void TearDownTestSuite() {
    delete sched_;
    sched_ = nullptr;
  }
  static HttpResult Batch(const std::string& token, const json& jobs,
                          const std::map<std::string, std::string>& headers = {}) {
    return sched_->Call("POST", "/v1/jobs:batch", token, json{{"jobs", jobs}}.dump(), headers);
  }
  static json Jobs(const std::string& token) {
    auto r = sched_->Call("GET", "/v1/jobs?limit=500", token);
    EXPECT_EQ(r.status, 200) << r.raw;
    return r.body["jobs"];
  }
  static SchedulerProcess* sched_;
};
SchedulerProcess* BatchE2eTest::sched_ = nullptr;

TEST_F(BatchE2eTest, EveryJobIsStoredInOrderAsItsSpecSays) {
  const std::string t = sched_->NewToken("batch-order", "bea");
  auto r = Batch(t, {Spec("a"), Spec("b", {{"gpus", 2}, {"priority", "high"}}),
                     Spec("c", {{"labels", {{"sweep", "lr"}}}})});
  ASSERT_EQ(r.status, 201) << r.raw;
  // The reply is written as text (decision 0046): byte for byte what dumping it as a json
  // object gives, keys sorted, with the JSON content type.
  EXPECT_EQ(r.raw, r.body.dump());
  const auto type = r.headers.find("Content-Type");
  ASSERT_NE(type, r.headers.end());
  EXPECT_EQ(type->second, "application/json");
  EXPECT_EQ(r.body["count"], 3);
  EXPECT_EQ(r.body["created"], 3);
  ASSERT_EQ(r.body["jobs"].size(), 3u);
  std::int64_t last = 0;
  const std::vector<std::string> names = {"a", "b", "c"};
  for (std::size_t i = 0; i < 3; ++i) {
    const json& item = r.body["jobs"][i];
    EXPECT_GT(item["id"].get<std::int64_t>(), last) << "ids follow the request's order";
    last = item["id"].get<std::int64_t>();
    EXPECT_EQ(item["state"], "pending");
    EXPECT_EQ(item["created"], true);
    auto job = sched_->Call("GET", "/v1/jobs/" + std::to_string(last), t);
    ASSERT_EQ(job.status, 200) << job.raw;
    EXPECT_EQ(job.body["name"], names[i]);
    EXPECT_EQ(job.body["command"], json({"python", "sweep.py", names[i]}));
    EXPECT_EQ(job.body["team"], "batch-order");
    EXPECT_EQ(job.body["user"], "bea");
    ASSERT_FALSE(job.body["events"].empty()) << job.raw;
    EXPECT_EQ(job.body["events"][0]["kind"], "submitted");
    EXPECT_EQ(job.body["events"][0]["message"], "submitted by bea");
  }
  auto b = sched_->Call("GET", "/v1/jobs/" + r.body["jobs"][1]["id"].dump(), t);
  EXPECT_EQ(b.body["gpus"], 2);
  EXPECT_EQ(b.body["priority"], "high");
  auto c = sched_->Call("GET", "/v1/jobs/" + r.body["jobs"][2]["id"].dump(), t);
  EXPECT_EQ(c.body["labels"], json({{"sweep", "lr"}}));
  EXPECT_EQ(Jobs(t).size(), 3u);
}

TEST_F(BatchE2eTest, OneBadSpecStoresNothingAndIsNamed) {
  const std::string t = sched_->NewToken("batch-bad", "bo");
  auto negative = Batch(t, {Spec("ok"), Spec("bad", {{"gpus", -1}}), Spec("ok2")});
  EXPECT_EQ(negative.status, 400) << negative.raw;
  EXPECT_EQ(negative.body["error"]["field"], "jobs[1].gpus") << negative.raw;
  EXPECT_EQ(negative.body["error"]["message"].get<std::string>().rfind("jobs[1]: ", 0), 0u)
      << negative.raw;
  auto unknown = Batch(t, {Spec("ok"), Spec("ok2"), Spec("typo", {{"gpu", 1}})});
  EXPECT_EQ(unknown.status, 400) << unknown.raw;
  EXPECT_EQ(unknown.body["error"]["field"], "jobs[2].gpu") << unknown.raw;
  auto not_object = Batch(t, {Spec("ok"), 7});
  EXPECT_EQ(not_object.status, 400) << not_object.raw;
  EXPECT_EQ(not_object.body["error"]["field"], "jobs[1]") << not_object.raw;
  // A dependency that does not exist fails the whole batch inside the transaction.
  auto dep = Batch(t, {Spec("ok"), Spec("dep", {{"after", {999999999}}})});
  EXPECT_EQ(dep.status, 422) << dep.raw;
  EXPECT_NE(dep.body["error"]["message"].get<std::string>().find("999999999"), std::string::npos);
  auto empty = Batch(t, json::array());
  EXPECT_EQ(empty.status, 400) << empty.raw;
  EXPECT_EQ(empty.body["error"]["field"], "jobs");
  auto extra = sched_->Call("POST", "/v1/jobs:batch", t,
                            json{{"jobs", {Spec("ok")}}, {"job", 1}}.dump());
  EXPECT_EQ(extra.status, 400) << extra.raw;
  auto bare = sched_->Call("POST", "/v1/jobs:batch", t, json{{"jobs", Spec("ok")}}.dump());
  EXPECT_EQ(bare.status, 400) << bare.raw;
  EXPECT_TRUE(Jobs(t).empty()) << "no failed batch may leave a job behind";
  // Researchers only: a worker's token cannot submit.
  const std::string worker = sched_->NewToken("batch-bad-infra", "node-9", "worker");
  EXPECT_EQ(Batch(worker, {Spec("x")}).status, 403);
}

TEST_F(BatchE2eTest, ARetryWithTheSameKeyStoresNothingTwice) {
  const std::string t = sched_->NewToken("batch-retry", "rhea");
  const std::map<std::string, std::string> key = {{"Idempotency-Key", "sweep-1"}};
  const json specs = {Spec("x"), Spec("y")};
  auto first = Batch(t, specs, key);
  ASSERT_EQ(first.status, 201) << first.raw;
  auto again = Batch(t, specs, key);
  ASSERT_EQ(again.status, 200) << again.raw;
  EXPECT_EQ(again.raw, again.body.dump());
  EXPECT_EQ(again.body["created"], 0);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(again.body["jobs"][i]["id"], first.body["jobs"][i]["id"]);
    EXPECT_EQ(again.body["jobs"][i]["created"], false);
  }
  // The same key with a changed job is a conflict that names it, and stores nothing.
  auto changed = Batch(t, {Spec("x"), Spec("y", {{"gpus", 3}})}, key);
  EXPECT_EQ(changed.status, 409) << changed.raw;
  EXPECT_NE(changed.body["error"]["message"].get<std::string>().find("jobs[1]"), std::string::npos)
      << changed.raw;
  // A longer batch under the key stores only what is new.
  auto longer = Batch(t, {Spec("x"), Spec("y"), Spec("z")}, key);
  ASSERT_EQ(longer.status, 201) << longer.raw;
  EXPECT_EQ(longer.body["created"], 1);
  EXPECT_EQ(Jobs(t).size(), 3u);
}

TEST_F(BatchE2eTest, OnlyTheBatchRouteTakesMoreThanOneMebibyte) {
  const std::string t = sched_->NewToken("batch-big", "bix");
  // 10,000 specs with a long argument: about 2 MB, over the 1 MiB of every other route.
  json specs = json::array();
  const std::string pad(150, 'p');
  for (int i = 0; i < 10000; ++i)
    specs.push_back(Spec("s" + std::to_string(i), {{"command", {"python", "sweep.py", pad}}}));
  const std::string body = json{{"jobs", specs}}.dump();
  ASSERT_GT(body.size(), 1u << 20);
  auto single = sched_->Call("POST", "/v1/jobs", t, body);
  EXPECT_EQ(single.status, 413) << single.raw.substr(0, 300);
  EXPECT_NE(single.body["error"]["message"].get<std::string>().find("1048576"), std::string::npos);
  auto big = sched_->Call("POST", "/v1/jobs:batch", t, body);
  ASSERT_EQ(big.status, 201) << big.raw.substr(0, 300);
  EXPECT_EQ(big.body["created"], 10000);
  auto last = sched_->Call("GET", "/v1/jobs/" + big.body["jobs"][9999]["id"].dump(), t);
  EXPECT_EQ(last.body["name"], "s9999");
  // One spec more than the limit is refused with the limit named.
  specs.push_back(Spec("one-too-many"));
  auto over = Batch(t, specs);
  EXPECT_EQ(over.status, 400) << over.raw.substr(0, 300);
  EXPECT_NE(over.body["error"]["message"].get<std::string>().find("1 to 10000"), std::string::npos);
  // The scheduler still answers a plain request on a new connection.
  EXPECT_EQ(sched_->Call("GET", "/v1/jobs?limit=1", t).status, 200);
}

TEST_F(BatchE2eTest, CliSubmitsAJsonLinesFileAndNamesTheBadLine) {
  const std::string t = sched_->NewToken("batch-cli", "cleo");
  TempDir dir;
  const std::string path = dir.path() + "/sweep.jsonl";
  {
    std::ofstream f(path);
    f << Spec("l1").dump() << "\n\n" << Spec("l3", {{"gpus", 2}}).dump() << "\n";
  }
  auto run = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, sched_->CliEnv(t));
  };
  auto ok = run({"submit", "--file", path, "--idempotency-key", "cli-sweep"});
  ASSERT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("Submitted 2 of 2 jobs"), std::string::npos) << ok.out;
  // Run again: the key makes it store nothing.
  auto again = run({"-o", "json", "submit", "--file", path, "--idempotency-key", "cli-sweep"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(json::parse(again.out)["created"], 0) << again.out;
  const json jobs = Jobs(t);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(jobs[0]["name"], "l3");  // newest first
  EXPECT_EQ(jobs[0]["gpus"], 2);
  // A bad spec is named by its line of the file, and nothing of the file is stored.
  {
    std::ofstream f(path);
    f << Spec("m1").dump() << "\n" << Spec("m2", {{"gpus", 0}}).dump() << "\n";
  }
  auto bad = run({"submit", "--file", path});
  EXPECT_EQ(bad.exit_code, 1) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("sweep.jsonl:2:"), std::string::npos) << bad.err;
  EXPECT_EQ(Jobs(t).size(), 2u);
  // A line that is not JSON is caught before anything is sent; --file takes no job flags.
  {
    std::ofstream f(path);
    f << Spec("n1").dump() << "\nnot json\n";
  }
  auto garbled = run({"submit", "--file", path});
  EXPECT_EQ(garbled.exit_code, 1);
  EXPECT_NE(garbled.err.find("sweep.jsonl:2: expected one JSON object per line"), std::string::npos)
      << garbled.err;
  auto mixed = run({"submit", "--file", path, "--gpus", "2"});
  EXPECT_EQ(mixed.exit_code, 2) << mixed.err;
  EXPECT_EQ(Jobs(t).size(), 2u);
}

}  // namespace
}  // namespace frugal::testing
