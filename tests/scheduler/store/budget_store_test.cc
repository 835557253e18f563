// Team budgets against a real PostgreSQL (decision 0010): set/get, a hard budget holding
// paid capacity but not reserved through the real cycle (LoadSnapshot, Decide, the guards,
// ApplyPlan), alerts that fire once per threshold per period (also across a period
// roll-over at explicit times), and the webhook outbox's claim/retry/give-up states.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/crypto.h"
#include "scheduler/policy/admission/budget.h"
#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/cycle.h"
#include "scheduler/policy/admission/quota.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class BudgetStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    // Reserved $1/GPU-hour with one 1-GPU node; on-demand $3 with one 8-GPU node.
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("res", model::CapacityKind::kReserved, 1'000'000, 8))
            .ok());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, 3'000'000, 8))
            .ok());
    ASSERT_TRUE(store_->RegisterWorker({0, "res-1", 0, 1, "a100", 80, {}}, "res", Seconds(600), std::nullopt).ok());
    ASSERT_TRUE(store_->RegisterWorker({0, "od-1", 0, 8, "a100", 80, {}}, "od", Seconds(600), std::nullopt).ok());
    for (const char* t : {"vision", "speech"}) {
      ASSERT_TRUE(store_->CreateTeam(t).ok());
      const std::string hash = Sha256Hex(std::string("token-") + t);
      ASSERT_TRUE(store_->CreateToken(t, "u", Role::kResearcher, hash).ok());
      who_[t] = *store_->Authenticate(hash);
    }
    auto conn = PgConn::Connect(conninfo_);
    ASSERT_TRUE(conn.ok());
    conn_ = std::move(*conn);
  }

  // A 1-GPU, 10-hour job: $30.00 expected on od, $10.00 (already paid) on res.
  model::JobId Submit(const std::string& team) {
    SubmitRequest r;
    r.spec.command = {"train"};
    r.spec.gpus = 1;
    r.spec.estimate = Seconds(10 * 3600);
    auto s = store_->Submit(who_[team], r);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? s->job.id : 0;
  }

  // One engine cycle's decision and write (policy/cycle.h), as the engine makes them.
  store::AppliedPlan Cycle() {
    auto snap = store_->LoadSnapshot({100, 100});
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    if (!snap.ok()) return {};
    const policy::CostPolicy policy;
    model::Plan plan = policy::DecideCycle(*snap, policy, policy::CycleDepth::kFull);
    auto applied = store_->ApplyPlan(plan);
    EXPECT_TRUE(applied.ok()) << applied.status().ToString();
    return applied.ok() ? *applied : store::AppliedPlan{};
  }

  std::string Query(const std::string& sql) {
    auto r = conn_->ExecScript(sql);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && r->rows() > 0 ? r->Text(0, 0) : "";
  }

  BudgetSpec Budget(Micros limit, bool hard, std::vector<int> alerts = {}) {
    BudgetSpec b;
    b.limit = limit;
    b.hard = hard;
    b.alert_at_pct = std::move(alerts);
    return b;
  }

  std::unique_ptr<PgConn> conn_;
  std::map<std::string, Principal> who_;
};

TEST_F(BudgetStoreTest, SetReplacesAndGetReadsBack) {
  BudgetSpec b = Budget(20'000'000'000, true, {50, 80});
  b.webhook_url = "http://127.0.0.1:9/hook";
  ASSERT_TRUE(store_->SetBudget("vision", b).ok());
  auto got = store_->GetBudget("vision");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->limit, 20'000'000'000);
  EXPECT_EQ(got->alert_at_pct, (std::vector<int>{50, 80}));
  EXPECT_TRUE(got->hard);
  EXPECT_EQ(got->webhook_url, "http://127.0.0.1:9/hook");
  BudgetSpec weekly = Budget(1'000'000, false);
  weekly.period = model::BudgetPeriod::kWeekly;
  ASSERT_TRUE(store_->SetBudget("vision", weekly).ok());
  got = store_->GetBudget("vision");
  EXPECT_EQ(got->period, model::BudgetPeriod::kWeekly);
  EXPECT_TRUE(got->webhook_url.empty());
  // A weekly period starts on a Monday at 00:00 UTC (1970-01-01 was a Thursday).
  auto st = store_->GetBudgetStatus("vision", std::nullopt);
  ASSERT_TRUE(st.ok());
  const auto days = std::chrono::duration_cast<std::chrono::hours>(
                        st->period_start.time_since_epoch()).count();
  EXPECT_EQ(days % 24, 0);
  EXPECT_EQ((days / 24 + 3) % 7, 0);
  EXPECT_EQ(st->period_end - st->period_start, std::chrono::hours(24 * 7));

  EXPECT_EQ(store_->SetBudget("nobody", b).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->GetBudget("speech").status().code(), StatusCode::kNotFound);
}

TEST_F(BudgetStoreTest, HardBudgetHoldsPaidCapacityButNotReserved) {
  // a. A $20 hard budget: the $30 on-demand run does not fit; reserved is open.
  ASSERT_TRUE(store_->SetBudget("vision", Budget(20'000'000, true)).ok());
  const model::JobId first = Submit("vision"), second = Submit("vision");
  const model::JobId other = Submit("speech");
  Cycle();
  // One vision job runs on the reserved node; the other waits with the budget as reason;
  // speech (no budget) runs on on-demand.
  EXPECT_EQ(Query("SELECT count(*) FROM attempts a JOIN nodes n ON n.id = a.node_id"
                  " WHERE n.name = 'res-1'"),
            "1");
  EXPECT_EQ(Query("SELECT count(*) FROM attempts a JOIN jobs j ON j.id = a.job_id"
                  " JOIN nodes n ON n.id = a.node_id WHERE n.name = 'od-1' AND j.team_id ="
                  " (SELECT id FROM teams WHERE name = 'vision')"),
            "0");
  EXPECT_EQ(Query("SELECT state FROM jobs WHERE id = " + std::to_string(other)), "running");
  const std::string held = Query(
      "SELECT id || ' ' || reason FROM jobs WHERE state = 'pending' AND id IN (" +
      std::to_string(first) + "," + std::to_string(second) + ")");
  EXPECT_NE(held.find("over budget: team vision used $0.00 of its $20.00 monthly hard limit;"
                      " this job's expected $30.00 does not fit; only reserved capacity is open"),
            std::string::npos)
      << held;
  // b. Cycles do not change that (and never drop the job).
  Cycle();
  EXPECT_EQ(Query("SELECT count(*) FROM jobs WHERE state = 'pending'"), "1");

  // c. Raising the limit admits it on on-demand, and its expected cost is committed.
  ASSERT_TRUE(store_->SetBudget("vision", Budget(1'000'000'000, true)).ok());
  Cycle();
  EXPECT_EQ(Query("SELECT count(*) FROM jobs WHERE state = 'pending'"), "0");
  EXPECT_EQ(Query("SELECT a.expected_cost_micros FROM attempts a JOIN nodes n ON"
                  " n.id = a.node_id JOIN jobs j ON j.id = a.job_id WHERE n.name = 'od-1'"
                  " AND j.team_id = (SELECT id FROM teams WHERE name = 'vision')"),
            "30000000");
  auto st = store_->GetBudgetStatus("vision", std::nullopt);
  ASSERT_TRUE(st.ok()) << st.status().ToString();
  // Used = what it has cost so far + what it is still expected to cost = $30 (the reserved
  // job counts for nothing); seconds of running may round a micro-dollar either way.
  EXPECT_NEAR(static_cast<double>(st->used()), 30'000'000.0, 1.0);
  EXPECT_GT(st->committed, 29'000'000);
  EXPECT_EQ(st->left(), 1'000'000'000 - st->used());
}

TEST_F(BudgetStoreTest, AlertsFireOncePerThresholdPerPeriod) {
  ASSERT_TRUE(store_->SetBudget("vision", Budget(100'000'000, false, {10, 20, 50})).ok());
  Submit("vision");
  Submit("vision");
  // One on reserved, one on on-demand: $30 committed of $100. The cycle's own transaction
  // records the alerts its starts reach (decision 0041).
  const std::vector<BudgetAlert> fired = Cycle().alerts;
  ASSERT_EQ(fired.size(), 2u);  // 10% and 20%; 50% not reached
  EXPECT_EQ(fired[0].threshold_pct, 10);
  EXPECT_EQ(fired[1].threshold_pct, 20);
  EXPECT_EQ(fired[0].delivery_state, "none");  // no webhook
  // A second evaluation fires nothing more, nor does the next cycle; a second store
  // (another scheduler, not the leader) is refused by the leader fence and writes nothing.
  EXPECT_TRUE(store_->FireBudgetAlerts(std::nullopt)->empty());
  EXPECT_TRUE(Cycle().alerts.empty());
  PgStore other(conninfo_, 1);
  auto refused = other.FireBudgetAlerts(std::nullopt);
  EXPECT_TRUE(store::IsNotLeader(refused.status())) << refused.status().ToString();

  // Next period (explicit time: one day into it). The on-demand job still runs: a day of it
  // is $72 of the new period, which reaches 10%, 20% and 50% again, once.
  auto now = store_->GetBudgetStatus("vision", std::nullopt);
  ASSERT_TRUE(now.ok());
  EXPECT_EQ(now->alerts.size(), 2u);
  const Timestamp next = now->period_end + std::chrono::hours(24);
  auto rolled = store_->FireBudgetAlerts(next);
  ASSERT_TRUE(rolled.ok()) << rolled.status().ToString();
  ASSERT_EQ(rolled->size(), 3u);
  EXPECT_EQ((*rolled)[2].threshold_pct, 50);
  EXPECT_EQ((*rolled)[0].period_start, now->period_end);
  EXPECT_TRUE(store_->FireBudgetAlerts(next)->empty());
  auto later = store_->GetBudgetStatus("vision", next);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(later->spent, 72'000'000);  // 24 h x 1 GPU x $3, from the period's start
  EXPECT_EQ(later->alerts.size(), 3u);  // this period's only
  EXPECT_EQ(Query("SELECT count(*) FROM budget_alerts"), "5");
}

TEST_F(BudgetStoreTest, WebhookOutboxRetriesThenGivesUp) {
  BudgetSpec b = Budget(10'000'000, false, {50});
  b.webhook_url = "http://127.0.0.1:9/hook";
  ASSERT_TRUE(store_->SetBudget("vision", b).ok());
  Submit("vision");
  Submit("vision");
  const std::vector<BudgetAlert> fired = Cycle().alerts;
  ASSERT_EQ(fired.size(), 1u);
  EXPECT_EQ(fired[0].delivery_state, "pending");
  // a. Claimed once: a second dispatcher finds nothing while the claim holds.
  auto claim = store_->ClaimAlertDeliveries(10);
  ASSERT_TRUE(claim.ok()) << claim.status().ToString();
  ASSERT_EQ(claim->size(), 1u);
  EXPECT_EQ((*claim)[0].attempt, 1);
  EXPECT_EQ((*claim)[0].url, "http://127.0.0.1:9/hook");
  const auto payload = nlohmann::json::parse((*claim)[0].payload);
  EXPECT_EQ(payload["threshold_pct"], 50);
  EXPECT_EQ(payload["team"], "vision");
  EXPECT_EQ(payload["limit"], "10.000000");
  EXPECT_TRUE(store_->ClaimAlertDeliveries(10)->empty());
  // b. A failure with no backoff is due again at once, as attempt 2.
  ASSERT_TRUE(store_->RecordAlertDelivery((*claim)[0].alert_id, false, "refused", 2, Seconds(0)).ok());
  claim = store_->ClaimAlertDeliveries(10);
  ASSERT_EQ(claim->size(), 1u);
  EXPECT_EQ((*claim)[0].attempt, 2);
  // c. The last attempt fails: given up, with the error kept, and never claimed again.
  ASSERT_TRUE(store_->RecordAlertDelivery((*claim)[0].alert_id, false, "refused", 2, Seconds(0)).ok());
  EXPECT_TRUE(store_->ClaimAlertDeliveries(10)->empty());
  auto st = store_->GetBudgetStatus("vision", std::nullopt);
  ASSERT_EQ(st->alerts.size(), 1u);
  EXPECT_EQ(st->alerts[0].delivery_state, "failed");
  EXPECT_EQ(st->alerts[0].last_error, "refused");
  EXPECT_EQ(st->alerts[0].delivery_attempts, 2);
}

}  // namespace
}  // namespace frugal::store
