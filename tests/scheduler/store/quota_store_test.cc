// Team quotas against a real PostgreSQL: set and read back, refused atomically when a pool
// is unknown, and never exceeded by cycles of the real policy under random submissions.
#include <gtest/gtest.h>

#include <random>

#include "common/crypto.h"
#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/admission/quota.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class QuotaStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, 3'000'000)).ok());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("spot", model::CapacityKind::kSpot, 1'000'000)).ok());
  }
};

TEST_F(QuotaStoreTest, SetReplacesAndGetReadsBack) {
  ASSERT_TRUE(store_->CreateTeam("vision").ok());
  QuotaSpec q;
  q.by_kind[model::CapacityKind::kOnDemand] = 16;
  q.by_kind[model::CapacityKind::kSpot] = 64;
  q.by_pool["od"] = 8;
  auto saved = store_->SetQuota("vision", q);
  ASSERT_TRUE(saved.ok()) << saved.status().ToString();
  EXPECT_EQ(saved->by_kind.at(model::CapacityKind::kOnDemand), 16);
  EXPECT_EQ(saved->by_pool.at("od"), 8);
  // The snapshot carries it by team and pool id.
  auto snap = store_->LoadSnapshot({10, 10});
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->quotas.size(), 1u);
  EXPECT_EQ(snap->quotas.begin()->second.by_kind.at(model::CapacityKind::kSpot), 64);
  // Setting replaces: the pool limit is gone.
  QuotaSpec smaller;
  smaller.by_kind[model::CapacityKind::kOnDemand] = 4;
  ASSERT_TRUE(store_->SetQuota("vision", smaller).ok());
  auto now = store_->GetQuota("vision");
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now->by_pool.empty());
  EXPECT_EQ(now->by_kind.size(), 1u);
}

TEST_F(QuotaStoreTest, UnknownTeamOrPoolIsRefusedAndChangesNothing) {
  ASSERT_TRUE(store_->CreateTeam("vision").ok());
  QuotaSpec q;
  q.by_kind[model::CapacityKind::kOnDemand] = 16;
  ASSERT_TRUE(store_->SetQuota("vision", q).ok());
  EXPECT_EQ(store_->SetQuota("nobody", q).status().code(), StatusCode::kNotFound);
  QuotaSpec bad;
  bad.by_kind[model::CapacityKind::kOnDemand] = 1;
  bad.by_pool["no-such-pool"] = 2;
  auto r = store_->SetQuota("vision", bad);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(r.status().field(), "pools");
  EXPECT_EQ(store_->GetQuota("vision")->by_kind.at(model::CapacityKind::kOnDemand), 16);
}

TEST_F(QuotaStoreTest, RandomSubmissionsNeverTakeATeamOverItsQuota) {
  std::mt19937 rng(17);
  std::vector<Principal> teams;
  for (const char* t : {"a", "b", "c"}) {
    ASSERT_TRUE(store_->CreateTeam(t).ok());
    const std::string hash = Sha256Hex(std::string("token-") + t);
    ASSERT_TRUE(store_->CreateToken(t, "u", Role::kResearcher, hash).ok());
    teams.push_back(*store_->Authenticate(hash));
    QuotaSpec q;
    q.by_kind[model::CapacityKind::kOnDemand] = 2 + static_cast<int>(rng() % 8);
    q.by_kind[model::CapacityKind::kSpot] = 2 + static_cast<int>(rng() % 8);
    ASSERT_TRUE(store_->SetQuota(t, q).ok());
  }
  for (const char* node : {"od-1", "od-2"}) {
    model::Node n{0, node, 0, 8, "a100", 80, {}};
    ASSERT_TRUE(store_->RegisterWorker(n, "od", Seconds(600), std::nullopt).ok());
  }
  model::Node s{0, "spot-1", 0, 8, "a100", 80, {}};
  auto spot = store_->RegisterWorker(s, "spot", Seconds(600), std::nullopt);
  ASSERT_TRUE(spot.ok());
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  const policy::CostPolicy policy;
  int held = 0;  // pending jobs a quota held back, summed over cycles
  for (int cycle = 0; cycle < 25; ++cycle) {
    for (int k = 0; k < 6; ++k) {
      SubmitRequest r;
      r.spec.command = {"train"};
      r.spec.gpus = 1 + static_cast<int>(rng() % 3);
      r.spec.estimate = Seconds(600);
      ASSERT_TRUE(store_->Submit(teams[rng() % teams.size()], r).ok());
    }
    auto snap = store_->LoadSnapshot({1000, 1000});
    ASSERT_TRUE(snap.ok());
    model::Plan plan = policy.Decide(*snap);
    policy::EnforceQuotas(*snap, plan);
    ASSERT_TRUE(store_->ApplyPlan(plan).ok());
    auto over = (*conn)->ExecScript(
        "SELECT t.name || ' holds ' || sum(a.gpus) || ' ' || p.capacity_kind || ' GPUs over '"
        " || q.max_gpus FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN teams t ON"
        " t.id = j.team_id JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
        " JOIN team_quotas q ON q.team_id = j.team_id AND q.capacity_kind = p.capacity_kind"
        " WHERE a.ended_at IS NULL GROUP BY t.name, p.capacity_kind, q.max_gpus"
        " HAVING sum(a.gpus) > q.max_gpus");
    ASSERT_TRUE(over.ok()) << over.status().ToString();
    for (int i = 0; i < over->rows(); ++i) ADD_FAILURE() << "cycle " << cycle << ": " << over->Text(i, 0);
    auto waiting = (*conn)->ExecScript(
        "SELECT count(*) FROM jobs WHERE state = 'pending' AND reason LIKE '%over team quota%'");
    ASSERT_TRUE(waiting.ok());
    held += static_cast<int>(waiting->Int(0, 0));
    // Some attempts end, making room for the next cycle.
    for (const auto& r : snap->running) {
      if (rng() % 4 != 0) continue;
      (void)(*conn)->ExecScript("UPDATE attempts SET ended_at = now(), end_reason = 'succeeded'"
                                " WHERE id = " + std::to_string(r.attempt_id));
      (void)(*conn)->ExecScript("UPDATE jobs SET state = 'succeeded', finished_at = now()"
                                " WHERE id = " + std::to_string(r.job_id));
    }
  }
  EXPECT_GT(held, 0) << "the quotas never held anything back: the test is too weak";
}

}  // namespace
}  // namespace frugal::store
