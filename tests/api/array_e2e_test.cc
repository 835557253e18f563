// Job arrays end to end (POST /v1/arrays, the `frugal` CLI's --array): the real scheduler
// over real HTTP. An array's tasks are jobs with their index and env; the array is shown
// by state and cancelled whole; a job can wait for a whole array; other teams see nothing.
#include <gtest/gtest.h>

#include "tests/testing/process.h"
#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

class ArrayE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { sched_ = new SchedulerProcess(); }
  static void TearDownTestSuite() {
    delete sched_;
    sched_ = nullptr;
  }
  static HttpResult Post(const std::string& token, const std::string& path, const json& body) {
    return sched_->Call("POST", path, token, body.dump());
  }
  static CommandResult Frugal(const std::string& token, std::vector<std::string> args) {
    args.insert(args.begin(), FRUGAL_CLI_BIN);
    return RunCommand(args, sched_->CliEnv(token));
  }
  static SchedulerProcess* sched_;
};
SchedulerProcess* ArrayE2eTest::sched_ = nullptr;

const json kJob = {{"name", "eval"}, {"command", {"python", "eval.py"}}, {"gpus", 1}};

TEST_F(ArrayE2eTest, TasksAreJobsShownTogetherAndCancelledTogether) {
  const std::string t = sched_->NewToken("arr-api", "ari");
  auto r = Post(t, "/v1/arrays", {{"job", kJob}, {"first", 0}, {"last", 6}, {"step", 2},
                                  {"max_running", 2}});
  ASSERT_EQ(r.status, 201) << r.raw;
  const auto id = r.body["id"].get<std::int64_t>();
  EXPECT_EQ(r.body["task_count"], 4);
  EXPECT_EQ(r.body["max_running"], 2);
  EXPECT_EQ(r.body["states"], json({{"pending", 4}}));
  EXPECT_EQ(r.body["last_job"].get<std::int64_t>() - r.body["first_job"].get<std::int64_t>(), 3);
  auto tasks = sched_->Call("GET", "/v1/jobs?array=" + std::to_string(id), t);
  ASSERT_EQ(tasks.status, 200) << tasks.raw;
  ASSERT_EQ(tasks.body["jobs"].size(), 4u);
  std::set<int> indices;
  for (const auto& j : tasks.body["jobs"]) {
    EXPECT_EQ(j["array_id"], id);
    indices.insert(j["array_index"].get<int>());
    EXPECT_EQ(j["env"]["FRUGAL_ARRAY_INDEX"], j["array_index"].dump());
    EXPECT_EQ(j["command"], kJob["command"]);
  }
  EXPECT_EQ(indices, (std::set<int>{0, 2, 4, 6}));
  // A job that waits for the whole array.
  auto after = Post(t, "/v1/jobs", {{"command", {"python", "collect.py"}}, {"after_arrays", {id}}});
  ASSERT_EQ(after.status, 201) << after.raw;
  EXPECT_EQ(after.body["after"].size(), 4u) << after.raw;
  // Another team: no array, no tasks, no dependency on it.
  const std::string other = sched_->NewToken("arr-other", "oz");
  EXPECT_EQ(sched_->Call("GET", "/v1/arrays/" + std::to_string(id), other).status, 404);
  EXPECT_EQ(Post(other, "/v1/arrays/" + std::to_string(id) + "/cancel", json::object()).status, 404);
  EXPECT_TRUE(
      sched_->Call("GET", "/v1/jobs?array=" + std::to_string(id), other).body["jobs"].empty());
  auto sneaky = Post(other, "/v1/jobs", {{"command", {"x"}}, {"after_arrays", {id}}});
  EXPECT_EQ(sneaky.status, 422) << sneaky.raw;
  EXPECT_EQ(sneaky.body["error"]["field"], "after_arrays");
  // Cancel ends every task at once.
  auto cancel = sched_->Call("POST", "/v1/arrays/" + std::to_string(id) + "/cancel", t);
  ASSERT_EQ(cancel.status, 200) << cancel.raw;
  EXPECT_EQ(cancel.body["cancelled"], 4);
  EXPECT_EQ(cancel.body["states"], json({{"cancelled", 4}}));
}

TEST_F(ArrayE2eTest, BadArraysAreRefusedNamingTheField) {
  const std::string t = sched_->NewToken("arr-bad", "bea");
  const std::vector<std::pair<json, std::string>> cases = {
      {{{"job", kJob}, {"first", 5}, {"last", 2}}, "last"},
      {{{"job", kJob}, {"first", 0}, {"last", 10000}}, "last"},  // 10,001 tasks
      {{{"job", kJob}, {"first", -1}, {"last", 2}}, "first"},
      {{{"job", kJob}, {"first", 0}, {"last", 2}, {"step", 0}}, "step"},
      {{{"job", kJob}, {"first", 0}, {"last", 2}, {"max_running", 0}}, "max_running"},
      {{{"job", {{"command", {"x"}}, {"gpus", -2}}}, {"first", 0}, {"last", 2}}, "job.gpus"},
      {{{"job", kJob}, {"first", 0}, {"last", 2}, {"size", 3}}, "size"},
      {{{"first", 0}, {"last", 2}}, "job"},
  };
  for (const auto& [body, field] : cases) {
    auto r = Post(t, "/v1/arrays", body);
    EXPECT_EQ(r.status, 400) << body.dump() << "\n" << r.raw;
    EXPECT_EQ(r.body["error"]["field"], field) << body.dump() << "\n" << r.raw;
  }
  auto missing = Post(t, "/v1/arrays", {{"job", kJob}, {"first", 0}, {"last", 1},
                                        {"after_array_index", 99999999}});
  EXPECT_EQ(missing.status, 422) << missing.raw;
  EXPECT_TRUE(sched_->Call("GET", "/v1/jobs", t).body["jobs"].empty()) << "nothing was stored";
}

TEST_F(ArrayE2eTest, TheCliSubmitsFollowsAndCancelsAnArray) {
  const std::string t = sched_->NewToken("arr-cli", "cy");
  auto sub = Frugal(t, {"submit", "--array", "0-3%2", "--name", "sweep", "--", "python", "x.py"});
  ASSERT_EQ(sub.exit_code, 0) << sub.out << sub.err;
  EXPECT_NE(sub.out.find("4 tasks"), std::string::npos) << sub.out;
  const std::string id = sub.out.substr(6, sub.out.find(':') - 6);  // "Array N: ..."
  auto status = Frugal(t, {"status", "--array", id});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  EXPECT_NE(status.out.find("4 tasks: 4 pending"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("0-3"), std::string::npos) << status.out;
  auto list = Frugal(t, {"-o", "json", "list", "--array", id});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(json::parse(list.out)["jobs"].size(), 4u);
  auto cost = Frugal(t, {"cost", "--array", id});
  ASSERT_EQ(cost.exit_code, 0) << cost.err;
  EXPECT_NE(cost.out.find("cost $0.00"), std::string::npos) << cost.out;
  auto cancel = Frugal(t, {"cancel", "--array", id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("cancelled 4"), std::string::npos) << cancel.out;
  // Usage errors never reach the server.
  EXPECT_EQ(Frugal(t, {"submit", "--array", "5-2", "--", "x"}).exit_code, 2);
  EXPECT_EQ(Frugal(t, {"submit", "--array", "0-3%0", "--", "x"}).exit_code, 2);
  EXPECT_EQ(Frugal(t, {"submit", "--after-array-index", "3", "--", "x"}).exit_code, 2);
  EXPECT_EQ(Frugal(t, {"status"}).exit_code, 2);
  EXPECT_EQ(Frugal(t, {"status", "1", "--array", "2"}).exit_code, 2);
}

// after_arrays in a batch: each item waits for every task, and the limit on stored
// dependencies holds over the whole batch, not per item.
TEST_F(ArrayE2eTest, BatchItemsWaitForArraysWithinOneLimit) {
  const std::string t = sched_->NewToken("arr-batch", "bo");
  auto a = Post(t, "/v1/arrays", {{"job", kJob}, {"first", 0}, {"last", 999}});
  ASSERT_EQ(a.status, 201) << a.raw;
  const auto id = a.body["id"].get<std::int64_t>();
  const json item = {{"command", {"collect"}}, {"after_arrays", {id, id}}};
  auto two = Post(t, "/v1/jobs:batch", {{"jobs", {item, item}}});
  ASSERT_EQ(two.status, 201) << two.raw;
  auto job = sched_->Call("GET", "/v1/jobs/" + two.body["jobs"][1]["id"].dump(), t);
  EXPECT_EQ(job.body["after"].size(), 1000u) << "each task once, though the array was named twice";
  // 101 items of 1,000 tasks each is 101,000 stored ids: refused, naming the item past it.
  json items = json::array();
  for (int i = 0; i < 101; ++i) items.push_back(item);
  auto over = Post(t, "/v1/jobs:batch", {{"jobs", items}});
  EXPECT_EQ(over.status, 400) << over.raw.substr(0, 400);
  EXPECT_EQ(over.body["error"]["field"], "jobs[100].after_arrays") << over.raw.substr(0, 400);
  // A task in both after_arrays and after_any is refused, as for explicit job ids.
  const auto first = a.body["first_job"].get<std::int64_t>();
  auto both = Post(t, "/v1/jobs", {{"command", {"x"}}, {"after_arrays", {id}}, {"after_any", {first}}});
  EXPECT_EQ(both.status, 400) << both.raw.substr(0, 400);
  EXPECT_EQ(both.body["error"]["field"], "after_arrays");
  // An array's Idempotency-Key must be text PostgreSQL can hold.
  auto bad_key = sched_->Call("POST", "/v1/arrays", t,
                              json{{"job", kJob}, {"first", 0}, {"last", 1}}.dump(),
                              {{"Idempotency-Key", "k\xff"}});
  EXPECT_EQ(bad_key.status, 400) << bad_key.raw;
}

}  // namespace
}  // namespace frugal::testing
