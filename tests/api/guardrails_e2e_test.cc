// Guardrails end to end (decision 0012) with the real scheduler and CLI: max_runtime per
// priority class (default given, 422 above the maximum), big premium requests held until
// `frugal admin approve` (reason in status and why; cancel works while held), the RBAC
// matrix of every new route, and bad input answered with a 4xx naming what to fix.
#include <gtest/gtest.h>

#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

std::string Show(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

class GuardrailsE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerProcess::Options o;
    o.extra_args = {"--cycle-interval", "1s"};
    sched_ = std::make_unique<SchedulerProcess>(o);
    researcher_ = sched_->NewToken("vision", "ada");
  }
  CommandResult Frugal(const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, sched_->CliEnv(token));
  }
  HttpResult Call(const std::string& method, const std::string& path, const std::string& token,
                  const json& body = nullptr) {
    return sched_->Call(method, path, token, body.is_null() ? "" : body.dump());
  }
  HttpResult Submit(const json& spec) { return Call("POST", "/v1/jobs", researcher_, spec); }

  std::unique_ptr<SchedulerProcess> sched_;
  std::string researcher_;
};

TEST_F(GuardrailsE2eTest, ClassRuntimeDefaultIsGivenAndAboveTheMaximumIsRefused) {
  auto set = Frugal(sched_->admin_token(), {"admin", "guardrails", "set", "--class", "normal",
                                            "--default-runtime", "1h", "--max-runtime", "2h"});
  ASSERT_EQ(set.exit_code, 0) << Show(set);
  EXPECT_NE(set.out.find("normal"), std::string::npos) << set.out;
  // a. No max_runtime: the class default.
  auto plain = Submit({{"command", {"true"}}, {"priority", "normal"}});
  ASSERT_EQ(plain.status, 201) << plain.raw;
  EXPECT_EQ(plain.body["max_runtime_seconds"], 3600);
  // b. Above the maximum: 422 naming it.
  auto big = Submit({{"command", {"true"}}, {"priority", "normal"}, {"max_runtime_seconds", 10800}});
  ASSERT_EQ(big.status, 422) << big.raw;
  EXPECT_EQ(big.body["error"]["field"], "max_runtime_seconds");
  EXPECT_NE(big.raw.find("maximum of priority class 'normal' (2h)"), std::string::npos) << big.raw;
  // c. Another class has no rule: untouched.
  auto low = Submit({{"command", {"true"}}, {"priority", "low"}});
  ASSERT_EQ(low.status, 201);
  EXPECT_TRUE(low.body["max_runtime_seconds"].is_null());
}

TEST_F(GuardrailsE2eTest, BigPremiumRequestIsHeldUntilAnAdminApproves) {
  auto set = Frugal(sched_->admin_token(), {"admin", "guardrails", "set", "--premium-types",
                                            "a100,h100", "--approval-above-gpus", "2"});
  ASSERT_EQ(set.exit_code, 0) << Show(set);
  auto held = Submit({{"command", {"true"}}, {"gpus", 4}, {"gpu_types", {"a100"}}});
  ASSERT_EQ(held.status, 201) << held.raw;
  EXPECT_EQ(held.body["state"], "held");
  const std::string id = std::to_string(held.body["id"].get<long long>());
  // a. The reason shows in status and why.
  auto status = Frugal(researcher_, {"status", id});
  ASSERT_EQ(status.exit_code, 0) << Show(status);
  EXPECT_NE(status.out.find("awaiting admin approval"), std::string::npos) << status.out;
  auto why = Frugal(researcher_, {"why", id});
  EXPECT_NE(why.out.find("awaiting admin approval"), std::string::npos) << Show(why);
  // b. A small or non-premium request is not held.
  EXPECT_EQ(Submit({{"command", {"true"}}, {"gpus", 2}}).body["state"], "pending");
  EXPECT_EQ(Submit({{"command", {"true"}}, {"gpus", 4}, {"gpu_types", {"t4"}}}).body["state"],
            "pending");
  // c. A researcher cannot approve; an admin can, once.
  auto path = "/v1/admin/jobs/" + id + "/approve";
  EXPECT_EQ(Call("POST", path, researcher_).status, 403);
  auto approve = Frugal(sched_->admin_token(), {"admin", "approve", id});
  ASSERT_EQ(approve.exit_code, 0) << Show(approve);
  EXPECT_NE(approve.out.find("pending"), std::string::npos) << approve.out;
  EXPECT_EQ(Call("POST", path, sched_->admin_token()).status, 409);
  // d. Cancel works while held; a cancelled job cannot be approved.
  auto other = Submit({{"command", {"true"}}, {"gpus", 8}});
  ASSERT_EQ(other.body["state"], "held") << other.raw;
  const std::string oid = std::to_string(other.body["id"].get<long long>());
  auto cancel = Call("POST", "/v1/jobs/" + oid + "/cancel", researcher_);
  ASSERT_EQ(cancel.status, 200) << cancel.raw;
  EXPECT_EQ(cancel.body["state"], "cancelled");
  EXPECT_EQ(Call("POST", "/v1/admin/jobs/" + oid + "/approve", sched_->admin_token()).status, 409);
}

TEST_F(GuardrailsE2eTest, EveryNewRouteAnswersEachRoleAsItShould) {
  const std::string other = sched_->NewToken("nlp", "bob");
  const std::string worker = sched_->NewToken("infra", "node-1", "worker");
  const std::string metrics = sched_->NewToken("infra", "prom", "metrics");
  auto job = Submit({{"command", {"true"}}});
  const std::string jid = std::to_string(job.body["id"].get<long long>());
  struct RouteCase {
    std::string method, path;
    json body;
    int admin_status;
  };
  const std::vector<RouteCase> routes = {
      {"GET", "/v1/admin/guardrails", nullptr, 200},
      {"POST", "/v1/admin/guardrails", json{{"idle", {{"threshold_percent", 7}}}}, 200},
      {"GET", "/v1/admin/teams/vision/idle-policy", nullptr, 200},
      {"POST", "/v1/admin/teams/vision/idle-policy", json{{"idle_policy", "requeue"}}, 200},
      {"POST", "/v1/admin/jobs/" + jid + "/approve", nullptr, 409},  // not held
  };
  for (const auto& r : routes) {
    SCOPED_TRACE(r.method + " " + r.path);
    EXPECT_EQ(Call(r.method, r.path, "", r.body).status, 401);
    EXPECT_EQ(Call(r.method, r.path, researcher_, r.body).status, 403);
    EXPECT_EQ(Call(r.method, r.path, other, r.body).status, 403);
    EXPECT_EQ(Call(r.method, r.path, worker, r.body).status, 403);
    EXPECT_EQ(Call(r.method, r.path, metrics, r.body).status, 403);
    EXPECT_EQ(Call(r.method, r.path, sched_->admin_token(), r.body).status, r.admin_status);
  }
  auto policy = Frugal(sched_->admin_token(), {"admin", "guardrails", "get", "--team", "vision"});
  ASSERT_EQ(policy.exit_code, 0) << Show(policy);
  EXPECT_NE(policy.out.find("idle policy: requeue"), std::string::npos) << policy.out;
  EXPECT_NE(policy.out.find("under 7%"), std::string::npos) << policy.out;
}

TEST_F(GuardrailsE2eTest, BadInputGetsAClearFourHundred) {
  const std::string admin = sched_->admin_token();
  struct Bad {
    std::string method, path;
    json body;
    int status;
    std::string says;
  };
  const std::vector<Bad> cases = {
      {"POST", "/v1/admin/guardrails", json{{"colour", 1}}, 400, "colour"},
      {"POST", "/v1/admin/guardrails", json{{"priority_classes", {{"urgent", nullptr}}}}, 400,
       "unknown priority 'urgent'"},
      {"POST", "/v1/admin/guardrails",
       json{{"priority_classes", {{"normal", {{"default_max_runtime_seconds", 7200},
                                              {"max_max_runtime_seconds", 3600}}}}}},
       400, "must not exceed the maximum"},
      {"POST", "/v1/admin/guardrails", json{{"idle", {{"threshold_percent", 0}}}}, 400,
       "threshold_percent"},
      {"POST", "/v1/admin/guardrails", json{{"idle", {{"window_seconds", "30m"}}}}, 400,
       "window_seconds"},
      {"POST", "/v1/admin/guardrails", json{{"approval", {{"premium_gpu_types", "a100"}}}}, 400,
       "premium_gpu_types"},
      {"POST", "/v1/admin/teams/vision/idle-policy", json{{"idle_policy", "maybe"}}, 400,
       "warn|requeue"},
      {"POST", "/v1/admin/teams/nobody/idle-policy", json{{"idle_policy", "warn"}}, 404,
       "nobody"},
      {"GET", "/v1/admin/teams/nobody/idle-policy", nullptr, 404, "nobody"},
      {"POST", "/v1/admin/jobs/abc/approve", nullptr, 400, "id"},
      {"POST", "/v1/admin/jobs/424242/approve", nullptr, 404, "424242"},
      {"POST", "/v1/admin/jobs/1/approve", json{{"why", "x"}}, 400, "why"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.method + " " + c.path + " " + c.body.dump());
    auto r = Call(c.method, c.path, admin, c.body);
    EXPECT_EQ(r.status, c.status) << r.raw;
    EXPECT_NE(r.raw.find(c.says), std::string::npos) << r.raw;
  }
  // Nothing above changed the settings.
  auto g = Call("GET", "/v1/admin/guardrails", admin);
  EXPECT_EQ(g.body["idle"]["threshold_percent"], 5) << g.raw;
  EXPECT_TRUE(g.body["priority_classes"].empty()) << g.raw;
}

}  // namespace
}  // namespace frugal::testing
