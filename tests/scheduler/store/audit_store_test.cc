// The audit log and `apply` against a real PostgreSQL: every admin change writes one row in
// its own transaction (a rolled-back change writes none), the application's connection
// cannot rewrite history, and apply is all-or-nothing and idempotent.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

using nlohmann::json;

// Pools of at most 16 GPUs.
model::Pool MakePool(const std::string& name, model::CapacityKind kind, Micros price) {
  return testing::A100Pool(name, kind, price, 16);
}

class AuditStoreTest : public testing::StoreTest {
 protected:
  std::vector<AuditEntry> Audit(std::optional<std::string> action = std::nullopt) {
    AuditFilter f;
    f.action = std::move(action);
    f.limit = 1000;
    auto r = store_->ListAudit(f);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<AuditEntry>{};
  }

  DesiredState SmallCluster() {
    DesiredState cfg;
    cfg.pools.push_back(MakePool("a100-od", model::CapacityKind::kOnDemand, 3'000'000));
    cfg.pools.push_back(MakePool("a100-spot", model::CapacityKind::kSpot, 1'000'000));
    TeamConfig vision;
    vision.name = "vision";
    vision.quota = QuotaSpec{};
    vision.quota->by_kind[model::CapacityKind::kSpot] = 32;
    vision.quota->by_pool["a100-od"] = 8;
    cfg.teams.push_back(vision);
    TeamConfig nlp;
    nlp.name = "nlp";
    cfg.teams.push_back(nlp);
    return cfg;
  }
};

TEST_F(AuditStoreTest, EveryAdminActionWritesOneRowNamingTheActor) {
  // a. Bootstrap wrote the first row, with no token (none existed yet).
  auto rows = Audit();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].action, "bootstrap");
  EXPECT_FALSE(rows[0].token_id.has_value());
  // b. One change of each kind, as the admin.
  ASSERT_TRUE(store_->CreateTeam(admin_, "vision").ok());
  ASSERT_TRUE(store_->UpsertPool(admin_, MakePool("od", model::CapacityKind::kOnDemand, 2'000'000)).ok());
  ASSERT_TRUE(store_->UpsertPool(admin_, MakePool("od", model::CapacityKind::kOnDemand, 2'500'000)).ok());
  QuotaSpec q;
  q.by_kind[model::CapacityKind::kOnDemand] = 4;
  ASSERT_TRUE(store_->SetQuota(admin_, "vision", q).ok());
  auto token = store_->CreateToken(admin_, "vision", "alice", Role::kResearcher, Sha256Hex("a"));
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(store_->RevokeToken(admin_, token->id).ok());
  // c. Newest first: one row per change, each naming the admin's token, user and team.
  rows = Audit();
  ASSERT_EQ(rows.size(), 7u);
  const std::vector<std::string> expected = {"token.revoke", "token.create", "quota.set",
                                             "pool.update",  "pool.create",  "team.create"};
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(rows[i].action, expected[i]);
    EXPECT_EQ(rows[i].token_id, admin_.token_id);
    EXPECT_EQ(rows[i].user, "admin");
    EXPECT_EQ(rows[i].team, "admin");
  }
  // d. Before and after hold the state: the price went from $2.00 to $2.50.
  EXPECT_EQ(rows[3].subject, "pool/od");
  EXPECT_EQ(json::parse(rows[3].before)["price_per_gpu_hour"], "2.000000");
  EXPECT_EQ(json::parse(rows[3].after)["price_per_gpu_hour"], "2.500000");
  EXPECT_EQ(rows[4].before, "null");
  EXPECT_EQ(json::parse(rows[0].after)["revoked"], true);
  EXPECT_EQ(json::parse(rows[2].after)["on_demand_gpus"], 4);
  // e. A change that changes nothing writes nothing.
  ASSERT_TRUE(store_->UpsertPool(admin_, MakePool("od", model::CapacityKind::kOnDemand, 2'500'000)).ok());
  ASSERT_TRUE(store_->RevokeToken(admin_, token->id).ok());
  EXPECT_EQ(Audit().size(), 7u);
}

TEST_F(AuditStoreTest, RolledBackChangeLeavesNoAuditRow) {
  ASSERT_TRUE(store_->CreateTeam(admin_, "vision").ok());
  const size_t before = Audit().size();
  // a. The quota names a pool that does not exist: the whole SetQuota rolls back.
  QuotaSpec q;
  q.by_kind[model::CapacityKind::kSpot] = 8;
  q.by_pool["no-such-pool"] = 4;
  auto r = store_->SetQuota(admin_, "vision", q);
  ASSERT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  // b. Neither the quota nor its audit row exists.
  EXPECT_TRUE(Audit("quota.set").empty());
  EXPECT_EQ(Audit().size(), before);
  EXPECT_TRUE(store_->GetQuota("vision")->by_kind.empty());
  // c. A duplicate team fails too, and leaves no second team.create row.
  EXPECT_EQ(store_->CreateTeam(admin_, "vision").status().code(), StatusCode::kConflict);
  EXPECT_EQ(Audit("team.create").size(), 1u);
}

TEST_F(AuditStoreTest, ApplicationConnectionCannotRewriteTheLog) {
  ASSERT_TRUE(store_->CreateTeam(admin_, "vision").ok());
  const size_t rows = Audit().size();
  // The same connection string (and so the same role) the application uses.
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  auto update = (*conn)->ExecScript("UPDATE audit_log SET user_name = 'mallory'");
  EXPECT_FALSE(update.ok());
  EXPECT_NE(update.status().message().find("append-only"), std::string::npos)
      << update.status().ToString();
  auto del = (*conn)->ExecScript("DELETE FROM audit_log");
  EXPECT_FALSE(del.ok());
  auto truncate = (*conn)->ExecScript("TRUNCATE audit_log");
  EXPECT_FALSE(truncate.ok());
  // Every row is still there, unchanged.
  auto after = Audit();
  ASSERT_EQ(after.size(), rows);
  for (const auto& e : after) EXPECT_NE(e.user, "mallory");
}

TEST_F(AuditStoreTest, ApplyCreatesEverythingWithOneRowPerChange) {
  auto changes = store_->ApplyConfig(admin_, SmallCluster(), /*dry_run=*/false);
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  // 2 pools, 2 teams, 1 quota: all created.
  ASSERT_EQ(changes->size(), 5u);
  for (const auto& c : *changes) EXPECT_EQ(c.kind, ConfigChange::Kind::kCreated) << c.subject;
  EXPECT_EQ(Audit().size(), 1u + 5u);  // bootstrap + 5
  EXPECT_EQ(store_->ListPools()->size(), 2u);
  EXPECT_EQ(store_->GetQuota("vision")->by_pool.at("a100-od"), 8);
}

TEST_F(AuditStoreTest, ApplyTwiceChangesNothingTheSecondTime) {
  ASSERT_TRUE(store_->ApplyConfig(admin_, SmallCluster(), false).ok());
  const size_t rows = Audit().size();
  auto again = store_->ApplyConfig(admin_, SmallCluster(), false);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 5u);
  for (const auto& c : *again) EXPECT_EQ(c.kind, ConfigChange::Kind::kUnchanged) << c.subject;
  EXPECT_EQ(Audit().size(), rows);
  // One price changes: exactly one update, one row, with before and after.
  auto cfg = SmallCluster();
  cfg.pools[1].price_per_gpu_hour = 1'200'000;
  auto third = store_->ApplyConfig(admin_, cfg, false);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ((*third)[1].kind, ConfigChange::Kind::kUpdated);
  EXPECT_EQ(json::parse((*third)[1].before)["price_per_gpu_hour"], "1.000000");
  EXPECT_EQ(Audit().size(), rows + 1);
}

TEST_F(AuditStoreTest, ApplySetsBudgetsIdlePoliciesAndGuardrailsOnceEach) {
  auto cfg = SmallCluster();
  BudgetSpec budget;
  budget.period = model::BudgetPeriod::kWeekly;
  budget.limit = 5'000'000'000;
  budget.alert_at_pct = {50, 90};
  budget.hard = true;
  cfg.teams[1].budget = budget;
  cfg.teams[1].idle_policy = model::IdlePolicy::kRequeue;
  model::GuardrailSettings g;
  g.premium_gpu_types = {"h100"};
  g.approval_above_gpus = 16;
  g.runtimes["normal"].max_max_runtime = Seconds(7200);
  cfg.guardrails = g;
  const size_t before = Audit().size();
  auto changes = store_->ApplyConfig(admin_, cfg, false);
  ASSERT_TRUE(changes.ok()) << changes.status().ToString();
  // 2 pools, 2 teams, 1 quota, then the budget, the idle policy and the guardrails.
  ASSERT_EQ(changes->size(), 8u);
  EXPECT_EQ((*changes)[5].subject, "budget/nlp");
  EXPECT_EQ((*changes)[5].kind, ConfigChange::Kind::kCreated);
  EXPECT_EQ(json::parse((*changes)[5].after)["limit"], "5000.000000");
  EXPECT_EQ((*changes)[6].subject, "idle_policy/nlp");
  EXPECT_EQ((*changes)[6].kind, ConfigChange::Kind::kUpdated);
  EXPECT_EQ((*changes)[7].subject, "guardrails");
  EXPECT_EQ((*changes)[7].kind, ConfigChange::Kind::kUpdated);
  EXPECT_EQ(Audit().size(), before + 8u);
  EXPECT_EQ(Audit("budget.set").size(), 1u);
  EXPECT_EQ(Audit("team.idle_policy").size(), 1u);
  EXPECT_EQ(Audit("guardrails.set").size(), 1u);
  auto saved = store_->GetBudget("nlp");
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->limit, 5'000'000'000);
  EXPECT_TRUE(saved->hard);
  EXPECT_EQ(*store_->GetTeamIdlePolicy("nlp"), model::IdlePolicy::kRequeue);
  EXPECT_EQ(store_->GetGuardrails()->approval_above_gpus, 16);
  // The same file again: all unchanged, no audit row.
  const size_t rows = Audit().size();
  auto again = store_->ApplyConfig(admin_, cfg, false);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 8u);
  for (const auto& c : *again) EXPECT_EQ(c.kind, ConfigChange::Kind::kUnchanged) << c.subject;
  EXPECT_EQ(Audit().size(), rows);
  // A changed budget, then guardrails the database refuses (a zero idle window): the budget
  // change is rolled back with the rest, and no audit row stays.
  auto bad = cfg;
  bad.teams[1].budget->limit = 1'000'000;
  bad.guardrails->idle_window = Seconds(0);
  auto refused = store_->ApplyConfig(admin_, bad, false);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().field(), "guardrails");
  EXPECT_EQ(store_->GetBudget("nlp")->limit, 5'000'000'000);
  EXPECT_EQ(store_->GetGuardrails()->idle_window, Seconds(1800));
  EXPECT_EQ(Audit().size(), rows);
}

TEST_F(AuditStoreTest, ApplyIsAllOrNothing) {
  // The last part is bad (its quota names an unknown pool): nothing before it stays.
  auto cfg = SmallCluster();
  TeamConfig bad;
  bad.name = "speech";
  bad.quota = QuotaSpec{};
  bad.quota->by_pool["h100-ghost"] = 2;
  cfg.teams.push_back(bad);
  auto r = store_->ApplyConfig(admin_, cfg, false);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().field(), "teams[2].quota");
  EXPECT_NE(r.status().message().find("h100-ghost"), std::string::npos) << r.status().message();
  EXPECT_TRUE(store_->ListPools()->empty());
  EXPECT_EQ(store_->ListTeams()->size(), 1u);  // only bootstrap's "admin"
  EXPECT_EQ(Audit().size(), 1u);               // only bootstrap's row
}

TEST_F(AuditStoreTest, DryRunShowsTheDiffAndChangesNothing) {
  auto r = store_->ApplyConfig(admin_, SmallCluster(), /*dry_run=*/true);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].kind, ConfigChange::Kind::kCreated);
  EXPECT_TRUE(store_->ListPools()->empty());
  EXPECT_EQ(Audit().size(), 1u);
  // A dry run finds the same errors a real apply would.
  auto cfg = SmallCluster();
  cfg.teams[0].quota->by_pool["ghost"] = 1;
  EXPECT_EQ(store_->ApplyConfig(admin_, cfg, true).status().field(), "teams[0].quota");
}

TEST_F(AuditStoreTest, RevokedTokenIsRefusedAtOnceAndListedWithoutSecret) {
  auto token = store_->CreateToken(admin_, "admin", "bob", Role::kResearcher, Sha256Hex("bob"));
  ASSERT_TRUE(token.ok());
  ASSERT_TRUE(store_->Authenticate(Sha256Hex("bob")).ok());
  auto revoked = store_->RevokeToken(admin_, token->id);
  ASSERT_TRUE(revoked.ok());
  EXPECT_TRUE(revoked->revoked_at.has_value());
  EXPECT_EQ(store_->Authenticate(Sha256Hex("bob")).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(store_->RevokeToken(admin_, 999999).status().code(), StatusCode::kNotFound);
  auto tokens = store_->ListTokens();
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ(tokens->size(), 2u);
  EXPECT_EQ((*tokens)[0].user, "bob");  // newest first
  EXPECT_TRUE((*tokens)[0].revoked_at.has_value());
  EXPECT_FALSE((*tokens)[1].revoked_at.has_value());
}

TEST_F(AuditStoreTest, BudgetGuardrailIdlePolicyAndApprovalAreAudited) {
  ASSERT_TRUE(store_->CreateTeam(admin_, "vision").ok());
  // a. A budget: created (before null), then the same again (no row).
  BudgetSpec b;
  b.limit = 20'000'000'000;  // $20,000
  b.alert_at_pct = {80};
  b.hard = true;
  ASSERT_TRUE(store_->SetBudget(admin_, "vision", b).ok());
  ASSERT_TRUE(store_->SetBudget(admin_, "vision", b).ok());
  auto budget = Audit("budget.set");
  ASSERT_EQ(budget.size(), 1u);
  EXPECT_EQ(budget[0].before, "null");
  EXPECT_EQ(json::parse(budget[0].after)["limit"], "20000.000000");
  // b. Guardrails and a team's idle policy.
  auto g = store_->GetGuardrails();
  ASSERT_TRUE(g.ok());
  g->approval_above_gpus = 4;
  ASSERT_TRUE(store_->SetGuardrails(admin_, *g).ok());
  ASSERT_EQ(Audit("guardrails.set").size(), 1u);
  EXPECT_EQ(json::parse(Audit("guardrails.set")[0].after)["approval_above_gpus"], 4);
  ASSERT_TRUE(store_->SetTeamIdlePolicy(admin_, "vision", model::IdlePolicy::kRequeue).ok());
  EXPECT_EQ(Audit("team.idle_policy").size(), 1u);
  // c. An approval names the approving admin.
  SubmitRequest r;
  r.spec.command = {"true"};
  r.request_sha256 = std::string(64, 'a');
  r.approval_reason = "awaiting admin approval";
  auto held = store_->Submit(admin_, r);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  ASSERT_TRUE(store_->ApproveJob(admin_, held->job.id).ok());
  auto approve = Audit("job.approve");
  ASSERT_EQ(approve.size(), 1u);
  EXPECT_EQ(approve[0].subject, "job/" + std::to_string(held->job.id));
  EXPECT_EQ(approve[0].token_id, admin_.token_id);
}

}  // namespace
}  // namespace frugal::store
