// Admin configuration end to end: the real `frugal` binary applies config/cluster.example.yaml
// to a real scheduler (dry run, apply, apply again), token revocation takes effect at once,
// the audit log reads back, and every new admin route answers each role as it should.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

std::string Show(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

class AdminE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { sched_ = std::make_unique<SchedulerProcess>(); }

  CommandResult Frugal(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, sched_->CliEnv(sched_->admin_token()));
  }
  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return sched_->Call(method, path, sched_->admin_token(), body.is_null() ? "" : body.dump());
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    const std::string path = dir_.path() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  std::unique_ptr<SchedulerProcess> sched_;
  TempDir dir_;
};

TEST_F(AdminE2eTest, ApplyTheExampleClusterWithTheCli) {
  const std::string file = std::string(FRUGAL_SOURCE_DIR) + "/config/cluster.example.yaml";
  // a. Dry run: the diff shows every pool and team created, and nothing is changed.
  auto dry = Frugal({"admin", "apply", "-f", file, "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << Show(dry);
  EXPECT_NE(dry.out.find("+ pool/a100-spot"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("+ quota/vision"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("+ budget/vision"), std::string::npos) << dry.out;
  EXPECT_NE(dry.out.find("~ guardrails"), std::string::npos) << dry.out;
  // 4 pools, 3 teams, 2 quotas, 1 budget, the guardrails; vision's idle policy is already warn.
  EXPECT_NE(dry.out.find("dry run: 11 changes would be applied (1 unchanged)"), std::string::npos)
      << dry.out;
  // `admin diff -f FILE` is the same dry run under the name kubectl users look for.
  auto diff = Frugal({"admin", "diff", "-f", file});
  ASSERT_EQ(diff.exit_code, 0) << Show(diff);
  EXPECT_EQ(diff.out, dry.out);
  EXPECT_TRUE(Admin("GET", "/v1/admin/pools").body["pools"].empty());
  EXPECT_EQ(Admin("GET", "/v1/admin/teams/vision/budget").status, 404);
  // b. Apply: pools, teams, quotas, the budget and the guardrails, all in place.
  auto applied = Frugal({"admin", "apply", "-f", file});
  ASSERT_EQ(applied.exit_code, 0) << Show(applied);
  EXPECT_NE(applied.out.find("applied 11 changes"), std::string::npos) << applied.out;
  auto budget = Frugal({"admin", "budget", "get", "vision", "-o", "json"});
  ASSERT_EQ(budget.exit_code, 0) << Show(budget);
  auto b = json::parse(budget.out);
  EXPECT_EQ(b["period"], "monthly") << budget.out;
  EXPECT_EQ(b["limit"], "20000.000000") << budget.out;
  EXPECT_EQ(b["alert_at_pct"], json({50, 80, 100})) << budget.out;
  EXPECT_EQ(b["hard"], false) << budget.out;
  auto guard = Admin("GET", "/v1/admin/guardrails");
  EXPECT_EQ(guard.body["approval"]["above_gpus"], 32) << guard.raw;
  EXPECT_EQ(guard.body["priority_classes"]["normal"]["max_max_runtime_seconds"], 604800)
      << guard.raw;
  EXPECT_EQ(guard.body["priority_classes"]["low"]["min_run_time_seconds"], 300) << guard.raw;
  auto pools = Admin("GET", "/v1/admin/pools").body["pools"];
  ASSERT_EQ(pools.size(), 4u) << pools;
  for (const auto& p : pools) {
    EXPECT_EQ(p["committed_gpus"], p["name"] == "a100-reserved" ? 16 : 0) << p;
  }
  auto quota = Admin("GET", "/v1/admin/teams/vision/quota");
  EXPECT_EQ(quota.body["spot_gpus"], 64) << quota.raw;
  EXPECT_EQ(quota.body["pools"]["a100-reserved"], 8) << quota.raw;
  // c. Again: everything unchanged, no audit rows added.
  const auto audit_rows = Admin("GET", "/v1/admin/audit?limit=1000").body["entries"].size();
  auto again = Frugal({"admin", "apply", "-f", file});
  ASSERT_EQ(again.exit_code, 0) << Show(again);
  EXPECT_NE(again.out.find("applied 0 changes (12 unchanged)"), std::string::npos) << again.out;
  EXPECT_EQ(again.out.find("+ "), std::string::npos) << again.out;
  EXPECT_EQ(Admin("GET", "/v1/admin/audit?limit=1000").body["entries"].size(), audit_rows);
  // d. One price edited: one "~" line with before -> after.
  std::ifstream in(file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("\"1.29\""), 6, "\"1.40\"");
  auto edited = Frugal({"admin", "apply", "-f", WriteFile("edited.yaml", text)});
  ASSERT_EQ(edited.exit_code, 0) << Show(edited);
  EXPECT_NE(edited.out.find("~ pool/a100-spot\n    price_per_gpu_hour: 1.290000 -> 1.400000"),
            std::string::npos)
      << edited.out;
  EXPECT_NE(edited.out.find("applied 1 changes"), std::string::npos) << edited.out;
  // e. The audit log names the admin and the change; `admin get` reads the state back.
  auto audit = Frugal({"admin", "audit", "--action", "pool.update", "-o", "json"});
  ASSERT_EQ(audit.exit_code, 0) << Show(audit);
  auto entries = json::parse(audit.out)["entries"];
  ASSERT_EQ(entries.size(), 1u) << audit.out;
  EXPECT_EQ(entries[0]["subject"], "pool/a100-spot");
  EXPECT_EQ(entries[0]["user"], "admin");
  EXPECT_EQ(entries[0]["before"]["price_per_gpu_hour"], "1.290000");
  auto yaml = Frugal({"admin", "get", "pools", "-o", "yaml"});
  ASSERT_EQ(yaml.exit_code, 0) << Show(yaml);
  EXPECT_NE(yaml.out.find("name: l4-ondemand"), std::string::npos) << yaml.out;
  auto quotas = Frugal({"admin", "get", "quotas"});
  ASSERT_EQ(quotas.exit_code, 0) << Show(quotas);
  EXPECT_NE(quotas.out.find("nlp"), std::string::npos) << quotas.out;
}

TEST_F(AdminE2eTest, ApplyRefusesBadFilesNamingThePartAndChangesNothing) {
  // a. An unknown key, refused with its path.
  auto typo = Frugal({"admin", "apply", "-f",
                      WriteFile("typo.yaml", "teams:\n  - name: x\n    quota:\n      spot_gpu: 3\n")});
  EXPECT_EQ(typo.exit_code, 1) << Show(typo);
  EXPECT_NE(typo.err.find("teams[0].quota: unknown field 'spot_gpu'"), std::string::npos)
      << typo.err;
  // b. A valid pool, then a quota naming a pool that does not exist: nothing is created.
  auto bad = Frugal({"admin", "apply", "-f",
                     WriteFile("bad.yaml",
                               "pools:\n  - {name: ok-pool, capacity_kind: spot, gpu_type: a100,"
                               " gpu_mem_gb: 80, max_gpus: 8, price_per_gpu_hour: 1.5}\n"
                               "teams:\n  - name: t1\n    quota: {pools: {ghost: 2}}\n")});
  EXPECT_EQ(bad.exit_code, 1) << Show(bad);
  EXPECT_NE(bad.err.find("teams[0].quota"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("ghost"), std::string::npos) << bad.err;
  EXPECT_TRUE(Admin("GET", "/v1/admin/pools").body["pools"].empty());
  EXPECT_EQ(Admin("GET", "/v1/admin/audit?action=pool.create").body["entries"].size(), 0u);
  // c. An unknown key in a budget and in the guardrails, each refused with its path.
  auto budget_typo = Frugal({"admin", "apply", "-f",
                             WriteFile("btypo.yaml", "teams:\n  - name: x\n    budget:\n"
                                                     "      limit: 10\n      amount: 10\n")});
  EXPECT_EQ(budget_typo.exit_code, 1) << Show(budget_typo);
  EXPECT_NE(budget_typo.err.find("teams[0].budget: unknown field 'amount'"), std::string::npos)
      << budget_typo.err;
  auto guard_typo = Frugal({"admin", "apply", "-f",
                            WriteFile("gtypo.yaml", "guardrails:\n  idle:\n    window: 60\n")});
  EXPECT_EQ(guard_typo.exit_code, 1) << Show(guard_typo);
  EXPECT_NE(guard_typo.err.find("guardrails: unknown field 'window'"), std::string::npos)
      << guard_typo.err;
  EXPECT_EQ(Admin("GET", "/v1/admin/teams/x/budget").status, 404);
  // d. Not YAML at all: the line is named.
  auto broken = Frugal({"admin", "apply", "-f", WriteFile("broken.yaml", "pools: [\n")});
  EXPECT_EQ(broken.exit_code, 1) << Show(broken);
  EXPECT_NE(broken.err.find("line"), std::string::npos) << broken.err;
}

TEST_F(AdminE2eTest, RevokedTokenIsRefusedAtOnceAndTokensNeverShowSecrets) {
  const std::string token = sched_->NewToken("rev", "rita");
  ASSERT_EQ(sched_->Call("GET", "/v1/whoami", token).status, 200);
  auto list = Admin("GET", "/v1/admin/tokens");
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(list.raw.find(token), std::string::npos);
  EXPECT_EQ(list.raw.find("sha256"), std::string::npos);
  std::int64_t id = 0;
  for (const auto& t : list.body["tokens"])
    if (t["user"] == "rita") id = t["id"].get<std::int64_t>();
  ASSERT_GT(id, 0) << list.raw;
  // The CLI revokes; the very next request with the token is 401.
  auto revoke = Frugal({"admin", "token", "revoke", std::to_string(id)});
  ASSERT_EQ(revoke.exit_code, 0) << Show(revoke);
  EXPECT_EQ(sched_->Call("GET", "/v1/whoami", token).status, 401);
  auto audit = Admin("GET", "/v1/admin/audit?action=token.revoke");
  ASSERT_EQ(audit.body["entries"].size(), 1u) << audit.raw;
  EXPECT_EQ(audit.body["entries"][0]["subject"], "token/" + std::to_string(id));
  EXPECT_EQ(Admin("POST", "/v1/admin/tokens/999999/revoke").status, 404);
  EXPECT_EQ(Admin("POST", "/v1/admin/tokens/abc/revoke").status, 400);
  EXPECT_EQ(Admin("GET", "/v1/admin/audit?since=yesterday").status, 400);
  EXPECT_EQ(Admin("GET", "/v1/admin/audit?limit=0").status, 400);
  EXPECT_EQ(Admin("POST", "/v1/admin/apply?dry_run=maybe", json::object()).status, 400);
}

TEST_F(AdminE2eTest, RbacMatrixForTheNewAdminRoutes) {
  const std::string researcher = sched_->NewToken("rbac-a", "ann");
  const std::string other_team = sched_->NewToken("rbac-b", "bob");
  const std::string worker = sched_->NewToken("rbac-infra", "node-1", "worker");
  const std::string metrics = sched_->NewToken("rbac-infra", "prom", "metrics");
  const std::string victim = sched_->NewToken("rbac-a", "victim");
  std::int64_t victim_id = 0;
  auto tokens = Admin("GET", "/v1/admin/tokens");
  for (const auto& t : tokens.body["tokens"])
    if (t["user"] == "victim") victim_id = t["id"].get<std::int64_t>();
  ASSERT_GT(victim_id, 0) << tokens.raw;
  struct Route {
    std::string method, path, body;
  };
  const std::vector<Route> routes = {
      {"GET", "/v1/admin/audit", ""},
      {"GET", "/v1/admin/tokens", ""},
      {"POST", "/v1/admin/tokens/" + std::to_string(victim_id) + "/revoke", ""},
      {"POST", "/v1/admin/apply?dry_run=false", R"({"teams":[{"name":"rbac-new"}]})"}};
  // Everyone but the admin: 401 without a token, 403 with any other role; nothing changes.
  const std::vector<std::pair<std::string, int>> callers = {
      {"", 401}, {researcher, 403}, {other_team, 403}, {worker, 403}, {metrics, 403}};
  for (const auto& [token, expected] : callers) {
    for (const auto& r : routes) {
      auto res = sched_->Call(r.method, r.path, token, r.body);
      EXPECT_EQ(res.status, expected) << r.method << " " << r.path << ": " << res.raw;
    }
  }
  EXPECT_EQ(sched_->Call("GET", "/v1/whoami", victim).status, 200);
  EXPECT_EQ(Admin("GET", "/v1/admin/teams").raw.find("rbac-new"), std::string::npos);
  // The admin: 200 on each, and the changes happen.
  for (const auto& r : routes) {
    auto res = sched_->Call(r.method, r.path, sched_->admin_token(), r.body);
    EXPECT_EQ(res.status, 200) << r.method << " " << r.path << ": " << res.raw;
  }
  EXPECT_EQ(sched_->Call("GET", "/v1/whoami", victim).status, 401);
  EXPECT_NE(Admin("GET", "/v1/admin/teams").raw.find("rbac-new"), std::string::npos);
}

}  // namespace
}  // namespace frugal::testing
