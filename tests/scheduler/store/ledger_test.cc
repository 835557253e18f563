// The cost ledger against a real PostgreSQL: billing when attempts end (finish, preemption,
// node loss), lost work, append-only entries, reports that add up, and the SQL and C++
// forms of the cost function agreeing. Property tests at the end.
#include <gtest/gtest.h>

#include <random>

#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/store/cost_store.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/invariants.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

// 1 GPU at $3.60/hour costs exactly 1000 micro-dollars a second.
constexpr Micros kRate = 3'600'000;

TEST(IntervalCostTest, ExactAndSplitInvariant) {
  EXPECT_EQ(IntervalCostMicros(1, kRate, 0, 0, 1'000'000), 1000);
  EXPECT_EQ(IntervalCostMicros(4, kRate, 0, 0, 3'600'000'000LL), 14'400'000);  // 4 GPU-hours
  EXPECT_EQ(IntervalCostMicros(1, 1, 0, 0, 1'000'000), 0);  // fractions floor at the end only
  // A year of 1024 GPUs at $1000/h does not overflow.
  EXPECT_EQ(IntervalCostMicros(1024, 1'000'000'000, 0, 0, 365LL * 24 * 3'600'000'000LL),
            1024LL * 1'000'000'000 * 365 * 24);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const int gpus = 1 + static_cast<int>(rng() % 64);
    const Micros rate = static_cast<Micros>(rng() % 40'000'000);
    const std::int64_t origin = static_cast<std::int64_t>(rng() % 1'000'000'000'000LL);
    std::int64_t a = origin + static_cast<std::int64_t>(rng() % 100'000'000'000LL);
    std::int64_t c = a + static_cast<std::int64_t>(rng() % 100'000'000'000LL);
    std::int64_t b = a + (c > a ? static_cast<std::int64_t>(rng() % (c - a)) : 0);
    ASSERT_EQ(IntervalCostMicros(gpus, rate, origin, a, b) +
                  IntervalCostMicros(gpus, rate, origin, b, c),
              IntervalCostMicros(gpus, rate, origin, a, c));
  }
}

class LedgerTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, kRate)).ok());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("spot", model::CapacityKind::kSpot, kRate / 4)).ok());
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    conn_ = std::move(*c);
  }

  Registration Register(const std::string& node, const std::string& pool) {
    auto r = store_->RegisterWorker(testing::A100Node(node, 8), pool, Seconds(60), std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *r;
  }

  model::JobId Submit(int gpus) {
    SubmitRequest r;
    r.spec.command = {"train"};
    r.spec.gpus = gpus;
    return store_->Submit(admin_, r)->job.id;
  }

  // One fifo cycle; returns the active attempt of `job`, acknowledged as a worker's
  // heartbeat would (an attempt no worker acknowledged is never billed).
  model::AttemptId Place(model::JobId job) {
    auto snap = store_->LoadSnapshot({100, 100});
    EXPECT_TRUE(snap.ok());
    EXPECT_TRUE(store_->ApplyPlan(policy::FifoPolicy().Decide(*snap)).ok());
    auto d = store_->GetJob(job, std::nullopt);
    const model::AttemptId a = d->attempts.empty() ? 0 : d->attempts.back().id;
    EXPECT_TRUE(conn_->ExecScript("UPDATE attempts SET acked_at = now() WHERE id = " +
                                  std::to_string(a)).ok());
    return a;
  }

  void Sql(const std::string& sql) { ASSERT_TRUE(conn_->ExecScript(sql).ok()) << sql; }

  // A spot attempt that checkpointed 45 minutes into 60 is preempted: its usage and its
  // last 15 minutes as lost work. `batch`: reported as a worker's batch is
  // (FinishAttempts, which ends and bills each attempt in one write, decision 0052);
  // otherwise alone (FinishAttempt).
  void PreemptAfterCheckpoint(bool batch) {
    auto reg = Register("s1", "spot");
    model::JobId job = Submit(1);
    model::AttemptId a = Place(job);
    CheckpointReport ck;
    ck.attempt_id = a;
    ck.lease_epoch = reg.lease_epoch;
    ck.step = 10;
    ck.progress = 0.5;
    ck.uri = "file:///ck/10";
    ASSERT_TRUE(store_->CommitCheckpoint(ck, AuthOf(ck.attempt_id)).ok());
    const std::string id = std::to_string(a);
    Sql("UPDATE attempts SET started_at = now() - interval '60 minutes' WHERE id = " + id);
    Sql("UPDATE checkpoints SET created_at = now() - interval '15 minutes' WHERE attempt_id = " +
        id);
    if (batch) {
      FinishReport r{a, reg.lease_epoch, AuthOf(a).fence, Outcome::kPreempted, 143, ""};
      auto done = store_->FinishAttempts({r}, 1 << 20, AuthOf(a));
      ASSERT_TRUE(done.ok()) << done.status().ToString();
      ASSERT_TRUE(done->at(0).status.ok()) << done->at(0).status.ToString();
    } else {
      ASSERT_TRUE(
          store_->FinishAttempt(a, reg.lease_epoch, Outcome::kPreempted, 143, AuthOf(a)).ok());
    }
    // Spot at $0.90/h: usage $0.90 (+ms), lost 15 min = $0.225 (+ms).
    const std::int64_t usage =
        One("SELECT amount_micros FROM ledger_entries WHERE kind = 'usage' AND attempt_id = " + id);
    const std::int64_t lost = One(
        "SELECT amount_micros FROM ledger_entries WHERE kind = 'lost_work' AND attempt_id = " + id);
    EXPECT_NEAR(static_cast<double>(usage), 900'000, 2'000);
    EXPECT_NEAR(static_cast<double>(lost), 225'000, 2'000);
    EXPECT_EQ(One("SELECT count(*) FROM attempts WHERE billed AND id = " + id), 1);
    // Spot savings against the on-demand rate of the same GPU type: 0.90 h at 3.60 - 0.90.
    auto rep = store_->Cost({CostDimension::kPool, std::nullopt, std::nullopt, std::nullopt});
    ASSERT_TRUE(rep.ok()) << rep.status().ToString();
    ASSERT_EQ(rep->rows.size(), 1u);
    EXPECT_EQ(rep->rows[0].key, "spot");
    EXPECT_EQ(rep->rows[0].spend, usage);
    EXPECT_EQ(rep->rows[0].wasted, lost);
    EXPECT_NEAR(static_cast<double>(rep->rows[0].spot_savings), 3.0 * usage, 10);
    EXPECT_TRUE(testing::CheckLedger(*conn_).empty());
  }

  std::int64_t One(const std::string& sql) {
    auto r = conn_->ExecScript(sql);
    EXPECT_TRUE(r.ok()) << sql << " " << r.status().ToString();
    return r.ok() && r->rows() > 0 && !r->IsNull(0, 0) ? r->Int(0, 0) : -1;
  }

  std::unique_ptr<PgConn> conn_;
};

TEST_F(LedgerTest, FinishedAttemptIsBilledAtItsPoolsRate) {
  auto reg = Register("n1", "od");
  model::JobId job = Submit(2);
  model::AttemptId a = Place(job);
  ASSERT_GT(a, 0);
  // Pretend it ran exactly 10 minutes: 2 GPUs x $3.60/h x 600 s = $1.20.
  Sql("UPDATE attempts SET started_at = now() - interval '10 minutes' WHERE id = " +
      std::to_string(a));
  ASSERT_TRUE(store_->FinishAttempt(a, reg.lease_epoch, Outcome::kSucceeded, 0, AuthOf(a)).ok());
  const std::int64_t amount =
      One("SELECT amount_micros FROM ledger_entries WHERE kind = 'usage' AND attempt_id = " +
          std::to_string(a));
  // now() is the transaction's time, a few ms after the UPDATE's: 1.2 $ plus that.
  EXPECT_GE(amount, 1'200'000);
  EXPECT_LT(amount, 1'200'000 + 2 * 1000 * 5);  // under 5 s of slack
  EXPECT_EQ(One("SELECT count(*) FROM ledger_entries WHERE kind = 'lost_work'"), 0);
  EXPECT_TRUE(testing::CheckLedger(*conn_).empty());
}

TEST_F(LedgerTest, PreemptionBillsLostWorkSinceTheLastCheckpoint) {
  PreemptAfterCheckpoint(/*batch=*/false);
}

TEST_F(LedgerTest, BatchFinishBillsLostWorkSinceTheLastCheckpoint) {
  PreemptAfterCheckpoint(/*batch=*/true);
}

TEST_F(LedgerTest, ABatchFinishThatCannotBillEveryAttemptChangesNothing) {
  auto reg = Register("n1", "od");
  const model::JobId job = Submit(1);
  const model::AttemptId a = Place(job);
  const std::string id = std::to_string(a);
  // A live attempt already marked billed (no path writes this): the fence read takes it,
  // the statement that ends and bills skips it. The job must not move on without it.
  Sql("UPDATE attempts SET billed = true WHERE id = " + id);
  FinishReport r{a, reg.lease_epoch, AuthOf(a).fence, Outcome::kSucceeded, 0, ""};
  auto done = store_->FinishAttempts({r}, 1 << 20, AuthOf(a));
  EXPECT_FALSE(done.ok());
  EXPECT_EQ(One("SELECT count(*) FROM attempts WHERE ended_at IS NULL AND id = " + id), 1);
  EXPECT_EQ(
      One("SELECT count(*) FROM jobs WHERE state = 'running' AND id = " + std::to_string(job)), 1);
}

TEST_F(LedgerTest, LostNodesAttemptsAreBilledAndEntriesAreAppendOnly) {
  Register("n1", "od");
  model::JobId job = Submit(1);
  model::AttemptId a = Place(job);
  Sql("UPDATE nodes SET lease_expires_at = now() - interval '1 second'");
  auto lost = store_->SweepLostNodes();
  ASSERT_TRUE(lost.ok());
  ASSERT_EQ(lost->size(), 1u);
  EXPECT_EQ(lost->at(0).attempts, std::vector<model::AttemptId>{a});
  EXPECT_EQ(One("SELECT count(*) FROM ledger_entries WHERE attempt_id = " + std::to_string(a) +
                " AND kind = 'usage'"),
            1);
  EXPECT_FALSE(conn_->ExecScript("UPDATE ledger_entries SET amount_micros = 0").ok());
  EXPECT_FALSE(conn_->ExecScript("DELETE FROM ledger_entries").ok());
  EXPECT_TRUE(testing::CheckLedger(*conn_).empty());
}

TEST_F(LedgerTest, SqlAndCppCostFunctionsAgree) {
  std::mt19937_64 rng(11);
  for (int i = 0; i < 300; ++i) {
    const int gpus = 1 + static_cast<int>(rng() % 1024);
    const Micros rate = static_cast<Micros>(rng() % 100'000'000);
    const std::int64_t origin = 1'700'000'000'000'000LL + static_cast<std::int64_t>(rng() % 1'000'000'000'000ULL);
    const std::int64_t t0 = origin + static_cast<std::int64_t>(rng() % 100'000'000'000ULL);
    const std::int64_t t1 = t0 + static_cast<std::int64_t>(rng() % 1'000'000'000'000ULL);
    auto ts = [](std::int64_t us) { return "to_timestamp(" + std::to_string(us) + " / 1e6)"; };
    const std::int64_t sql = One("SELECT frugal_cost_micros(" + std::to_string(gpus) + ", " +
                                 std::to_string(rate) + ", " + ts(origin) + ", " + ts(t0) + ", " +
                                 ts(t1) + ")");
    ASSERT_EQ(sql, IntervalCostMicros(gpus, rate, origin, t0, t1))
        << gpus << " " << rate << " " << origin << " " << t0 << " " << t1;
  }
}

TEST_F(LedgerTest, RandomRunsWithPreemptionsReconcileAndReportsAddUp) {
  auto od = Register("n1", "od");
  auto spot = Register("s1", "spot");
  std::mt19937 rng(3);
  std::vector<model::JobId> jobs;
  for (int round = 0; round < 30; ++round) {
    jobs.push_back(Submit(1 + static_cast<int>(rng() % 4)));
    auto snap = store_->LoadSnapshot({100, 100});
    ASSERT_TRUE(store_->ApplyPlan(policy::FifoPolicy().Decide(*snap)).ok());
    // End a random active attempt with a random outcome.
    auto running = store_->LoadSnapshot({100, 100})->running;
    if (running.empty()) continue;
    const auto& r = running[rng() % running.size()];
    Sql("UPDATE attempts SET started_at = started_at - interval '" +
        std::to_string(rng() % 5000) + " seconds' WHERE id = " + std::to_string(r.attempt_id));
    const Outcome outcomes[] = {Outcome::kSucceeded, Outcome::kFailed, Outcome::kPreempted};
    const auto epoch = r.node_id == od.node_id ? od.lease_epoch : spot.lease_epoch;
    ASSERT_TRUE(store_->FinishAttempt(r.attempt_id, epoch, outcomes[rng() % 3], 0, AuthOf(r.attempt_id)).ok());
  }
  EXPECT_TRUE(testing::CheckLedger(*conn_).empty());
  // Reports: by job and by pool each add up to the same total; running attempts included.
  auto by_job = store_->Cost({CostDimension::kJob, std::nullopt, std::nullopt, std::nullopt});
  auto by_pool = store_->Cost({CostDimension::kPool, std::nullopt, std::nullopt, std::nullopt});
  ASSERT_TRUE(by_job.ok() && by_pool.ok());
  Micros jobs_sum = 0, pools_sum = 0;
  for (const auto& row : by_job->rows) jobs_sum += row.spend;
  for (const auto& row : by_pool->rows) pools_sum += row.spend;
  EXPECT_EQ(jobs_sum, by_job->total.spend);
  EXPECT_EQ(pools_sum, by_pool->total.spend);
  // A window that ended before anything ran costs nothing.
  auto empty = store_->Cost({CostDimension::kTeam, Timestamp{}, Timestamp{} + Seconds(1),
                             std::nullopt});
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->total.spend, 0);
}

}  // namespace
}  // namespace frugal::store
