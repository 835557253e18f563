// The scheduler's log end to end: at debug level (every request logged) each line the real
// binary writes is one JSON object with a timestamp, a level and an event, and no token
// secret ever appears in it, whether the token was right, wrong, or just issued.
#include <gtest/gtest.h>

#include <sstream>

#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

TEST(LogE2eTest, EveryLineIsJsonAndNoTokenIsEverLogged) {
  SchedulerProcess::Options opt;
  opt.log_level = "debug";
  SchedulerProcess sched(opt);
  const std::string admin = sched.admin_token();
  const std::string user = sched.NewToken("vision", "ada");
  const std::string wrong = "frg_this-is-not-a-valid-token-0123456789";

  EXPECT_EQ(sched.Call("GET", "/v1/jobs", wrong).status, 401);
  auto job = sched.Call("POST", "/v1/jobs", user,
                        json{{"command", {"train"}}, {"gpus", 1}, {"name", "logged"}}.dump());
  ASSERT_EQ(job.status, 201) << job.raw;
  const auto id = job.body["id"].get<std::int64_t>();
  EXPECT_EQ(sched.Call("GET", "/v1/jobs/" + std::to_string(id), user).status, 200);
  EXPECT_EQ(sched.Call("POST", "/v1/jobs", user, "{not json").status, 400);
  EXPECT_EQ(sched.Call("GET", "/v1/admin/pools", user).status, 403);
  ASSERT_EQ(sched.Stop(), 0);

  const std::string log = sched.process().Stderr();
  std::istringstream lines(log);
  std::string line;
  int parsed = 0;
  bool saw_submit = false, saw_request = false;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    ASSERT_FALSE(j.is_discarded()) << "not one JSON object: " << line;
    ASSERT_TRUE(j.is_object()) << line;
    EXPECT_TRUE(j.contains("ts") && j.contains("level") && j.contains("event")) << line;
    if (j["event"] == "job_submitted" && j.value("job_id", 0LL) == id) saw_submit = true;
    if (j["event"] == "http_request") saw_request = true;
    ++parsed;
  }
  EXPECT_TRUE(saw_submit) << "the submit was not logged with its job id:\n" << log;
  EXPECT_TRUE(saw_request) << "debug level did not log requests:\n" << log;
  EXPECT_GT(parsed, 5) << log;
  for (const std::string& secret : {admin, user, wrong}) {
    EXPECT_EQ(log.find(secret), std::string::npos) << "a token was logged:\n" << log;
  }
}

}  // namespace
}  // namespace frugal::testing
