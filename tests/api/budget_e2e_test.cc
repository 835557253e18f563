// Budgets end to end (decision 0010) with the real scheduler and CLI: a threshold alert is
// POSTed to a webhook (a small httplib server here that refuses the first POST, so the
// retry is exercised) and shows in `frugal budget`; submit prints the expected cost and
// what is left; a hard limit holds the next paid job with the numbers; every new route
// answers each role as it should; bad input gets a 4xx naming what to fix.
#include <gtest/gtest.h>
#include <httplib.h>

#include <mutex>
#include <thread>

#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

std::string Show(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// Receives webhook POSTs; answers 500 to the first, 200 after.
class Hook {
 public:
  Hook() {
    server_.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      bodies_.push_back(req.body);
      res.status = bodies_.size() == 1 ? 500 : 200;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Hook() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/hook"; }
  std::vector<std::string> bodies() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_;
  }

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> bodies_;
};

class BudgetE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SchedulerProcess::Options o;
    o.extra_args = {"--cycle-interval", "1s", "--lease-ttl", "120s"};
    sched_ = std::make_unique<SchedulerProcess>(o);
  }
  CommandResult Frugal(const std::string& token, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, sched_->CliEnv(token));
  }
  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return sched_->Call(method, path, sched_->admin_token(), body.is_null() ? "" : body.dump());
  }
  // An on-demand pool at $3/GPU-hour with one registered 8-GPU node.
  void OnDemandNode() {
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("od", "on_demand", "3.00", 8)));
    const std::string worker = sched_->NewToken("infra", "od-1", "worker");
    auto reg = sched_->Call("POST", "/v1/workers/register", worker,
                            R"({"node":"od-1","pool":"od","gpus":8,"gpu_type":"a100","gpu_mem_gb":80})");
    ASSERT_EQ(reg.status, 200) << reg.raw;
  }
  // A 1-GPU, 10-hour job: $30.00 expected on od.
  HttpResult SubmitTenHours(const std::string& token) {
    return sched_->Call("POST", "/v1/jobs", token,
                        R"({"command":["train"],"gpus":1,"estimate_seconds":36000})");
  }

  std::unique_ptr<SchedulerProcess> sched_;
};

TEST_F(BudgetE2eTest, AlertReachesTheWebhookOnceAndAHardLimitHoldsTheNextJob) {
  Hook hook;
  OnDemandNode();
  const std::string ann = sched_->NewToken("vision", "ann");
  // a. Admin sets a $40 monthly hard budget with a 50% alert and the webhook (CLI).
  auto set = Frugal(sched_->admin_token(),
                    {"admin", "budget", "set", "vision", "--monthly", "40", "--alert-at", "50%",
                     "--hard", "--webhook", hook.url()});
  ASSERT_EQ(set.exit_code, 0) << Show(set);
  EXPECT_NE(set.out.find("$40.00"), std::string::npos) << set.out;

  // b. Submit (CLI): the expected cost and what the team has left are printed.
  auto sub = Frugal(ann, {"submit", "--estimate", "10h", "--", "train"});
  ASSERT_EQ(sub.exit_code, 0) << Show(sub);
  EXPECT_NE(sub.out.find("Expected cost $30.00 on od; team vision has $40.00 left of its $40.00"
                         " monthly hard budget."),
            std::string::npos)
      << sub.out;

  // c. Once it runs, $30 of $40 is used: the 50% alert is POSTed; the first POST is
  // refused (500), the retry delivers it.
  ASSERT_TRUE(WaitFor([&] { return hook.bodies().size() >= 2; }, std::chrono::seconds(60)))
      << hook.bodies().size() << " POSTs";
  json alert = json::parse(hook.bodies()[1]);
  EXPECT_EQ(alert["event"], "budget_alert");
  EXPECT_EQ(alert["team"], "vision");
  EXPECT_EQ(alert["threshold_pct"], 50);
  EXPECT_EQ(alert["limit"], "40.000000");
  EXPECT_EQ(hook.bodies()[0], hook.bodies()[1]);  // the retry sends the same alert
  ASSERT_TRUE(WaitFor([&] {
    auto st = sched_->Call("GET", "/v1/teams/vision/budget", ann);
    return st.status == 200 && st.body["alerts"].size() == 1 &&
           st.body["alerts"][0]["delivery_state"] == "delivered";
  }, std::chrono::seconds(30)));

  // d. The next $30 job does not fit in the $10 left: held with the numbers, not dropped.
  auto second = SubmitTenHours(ann);
  ASSERT_EQ(second.status, 201) << second.raw;
  EXPECT_EQ(second.body["expected_cost"], "30.000000");
  const std::string path = "/v1/jobs/" + std::to_string(second.body["id"].get<std::int64_t>());
  std::string reason;
  ASSERT_TRUE(WaitFor([&] {
    auto j = sched_->Call("GET", path, ann);
    reason = j.body.is_object() ? j.body.value("reason", "") : "";
    return reason.find("over budget") != std::string::npos;
  }, std::chrono::seconds(30))) << reason;
  EXPECT_NE(reason.find("of its $40.00 monthly hard limit; this job's expected $30.00 does not"
                        " fit; only reserved capacity is open"),
            std::string::npos)
      << reason;
  EXPECT_EQ(sched_->Call("GET", path, ann).raw.find("\"running\""), std::string::npos);

  // e. `frugal budget` shows the status and the alert, delivered; still one POST delivered.
  auto status = Frugal(ann, {"budget"});
  ASSERT_EQ(status.exit_code, 0) << Show(status);
  EXPECT_NE(status.out.find("50%"), std::string::npos) << status.out;
  EXPECT_NE(status.out.find("delivered"), std::string::npos) << status.out;
  EXPECT_EQ(hook.bodies().size(), 2u);
}

TEST_F(BudgetE2eTest, RbacMatrixForTheBudgetRoutes) {
  const std::string researcher = sched_->NewToken("rbac-a", "ann");
  const std::string other_team = sched_->NewToken("rbac-b", "bob");
  const std::string worker = sched_->NewToken("rbac-infra", "node-1", "worker");
  const std::string metrics = sched_->NewToken("rbac-infra", "prom", "metrics");
  const std::string body = R"({"period":"monthly","limit":"100","alert_at_pct":[80],"hard":true})";
  ASSERT_EQ(Admin("POST", "/v1/admin/teams/rbac-a/budget", json::parse(body)).status, 200);
  ASSERT_EQ(Admin("POST", "/v1/admin/teams/rbac-b/budget", json::parse(body)).status, 200);
  struct Case {
    std::string method, path, token;
    int expected;
  };
  const std::string set = "/v1/admin/teams/rbac-a/budget", read = "/v1/teams/rbac-a/budget";
  const std::vector<Case> cases = {
      {"POST", set, "", 401}, {"POST", set, researcher, 403}, {"POST", set, other_team, 403},
      {"POST", set, worker, 403}, {"POST", set, metrics, 403},
      {"POST", set, sched_->admin_token(), 200},
      {"GET", set, "", 401}, {"GET", set, researcher, 403}, {"GET", set, other_team, 403},
      {"GET", set, worker, 403}, {"GET", set, metrics, 403},
      {"GET", set, sched_->admin_token(), 200},
      {"GET", read, "", 401}, {"GET", read, researcher, 200},
      {"GET", read, other_team, 404},  // as invisible as the other team's jobs
      {"GET", read, worker, 403}, {"GET", read, metrics, 403},
      {"GET", read, sched_->admin_token(), 200}};
  for (const auto& c : cases) {
    auto res = sched_->Call(c.method, c.path, c.token, c.method == "POST" ? body : "");
    EXPECT_EQ(res.status, c.expected) << c.method << " " << c.path << ": " << res.raw;
  }
  // Researchers do not see the webhook URL (it may carry a secret); admins do.
  EXPECT_FALSE(sched_->Call("GET", read, researcher).body.contains("webhook_url"));
  EXPECT_TRUE(sched_->Call("GET", read, sched_->admin_token()).body.contains("webhook_url"));
  // Another team's status reads the same as a team that does not exist.
  EXPECT_EQ(sched_->Call("GET", "/v1/teams/nobody/budget", other_team).status, 404);
}

TEST_F(BudgetE2eTest, BadInputGetsA4xxThatSaysWhatToFix) {
  sched_->NewToken("vision", "ann");
  struct Case {
    json body;
    std::string team;
    int status;
    std::string field, says;
  };
  const std::vector<Case> cases = {
      {{{"limit", "-5"}}, "vision", 400, "limit", "limit"},
      {{{"limit", "0"}}, "vision", 400, "limit", "more than 0"},
      {{{"limit", 20000}}, "vision", 400, "limit", "as a string"},
      {{{"limit", "100"}, {"alert_at_pct", {150}}}, "vision", 400, "alert_at_pct",
       "from 1 to 100, not 150"},
      {{{"limit", "100"}, {"webhook_url", "ftp://example.com/x"}}, "vision", 400, "webhook_url",
       "http://HOST"},
      {{{"limit", "100"}, {"webhook_url", "http://exa mple.com/"}}, "vision", 400,
       "webhook_url", "http://HOST"},
      // Empty is not "no webhook" (null is): the URL check runs on whatever is given.
      {{{"limit", "100"}, {"webhook_url", ""}}, "vision", 400, "webhook_url", "http://HOST"},
      {{{"limit", "100"}, {"period", "daily"}}, "vision", 400, "period", "monthly or weekly"},
      {{{"limit", "100"}, {"hard", "yes"}}, "vision", 400, "hard", "true or false"},
      {{{"limit", "100"}, {"budget", 1}}, "vision", 400, "budget", "budget"},
      {{{"limit", "100"}}, "nobody", 404, "", "team 'nobody' does not exist"}};
  for (const auto& c : cases) {
    auto res = Admin("POST", "/v1/admin/teams/" + c.team + "/budget", c.body);
    EXPECT_EQ(res.status, c.status) << c.body.dump() << ": " << res.raw;
    const json& err = res.body["error"];
    EXPECT_NE(err.value("message", "").find(c.says), std::string::npos) << res.raw;
    if (!c.field.empty()) {
      EXPECT_EQ(err.value("field", ""), c.field) << res.raw;
    }
  }
  // Nothing was saved.
  EXPECT_EQ(Admin("GET", "/v1/admin/teams/vision/budget").status, 404);
  // The CLI refuses 150% before sending anything.
  auto cli = Frugal(sched_->admin_token(),
                    {"admin", "budget", "set", "vision", "--monthly", "100", "--alert-at", "150%"});
  EXPECT_NE(cli.exit_code, 0);
  EXPECT_NE(cli.err.find("1% to 100%"), std::string::npos) << Show(cli);
}

}  // namespace
}  // namespace frugal::testing
