// The engine's cycle against a real PostgreSQL, with the fifo policy.
#include "scheduler/engine/engine.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/crypto.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"
#include "tests/testing/test_postgres.h"

namespace frugal::engine {
namespace {

using store::PgStore;

// Leadership is a lease with a fencing term (decision 0020). Steps: a. one store takes it,
// the other is refused; b. the standby's engine writes are fenced; c. the leader goes
// silent (as if frozen): once its lease lapses the standby takes term 2; d. the old
// leader's writes are refused and its renewal says why.
TEST(EngineTest, OnlyOneStorePerDatabaseLeadsAndTheOldTermIsFenced) {
  using std::chrono::milliseconds;
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore a(db, 2);
  PgStore b(db, 2);
  const milliseconds ttl(800);
  // a.
  auto first = a.TryLeadership(ttl);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(first->leader);
  EXPECT_TRUE(first->acquired);
  const std::int64_t term = first->term;
  EXPECT_GE(term, 1);
  auto renewed = a.TryLeadership(ttl);
  EXPECT_TRUE(renewed->leader);
  EXPECT_FALSE(renewed->acquired);  // kept, same term
  EXPECT_EQ(renewed->term, term);
  auto standby = b.TryLeadership(ttl);
  EXPECT_FALSE(standby->leader);
  EXPECT_EQ(standby->term, term);
  // b.
  EXPECT_TRUE(store::IsNotLeader(b.ApplyPlan({}).status()));
  EXPECT_TRUE(store::IsNotLeader(b.SweepLostNodes().status()));
  EXPECT_TRUE(a.ApplyPlan({}).ok());
  // c. a stops renewing; b polls as a standby's cycles would.
  bool took_over = false;
  for (int i = 0; i < 100 && !took_over; ++i) {
    auto s = b.TryLeadership(ttl);
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    took_over = s->leader;
    if (took_over) {
      EXPECT_EQ(s->term, term + 1);
    } else {
      std::this_thread::sleep_for(milliseconds(50));
    }
  }
  ASSERT_TRUE(took_over);
  // d.
  auto fenced = a.ApplyPlan({});
  EXPECT_TRUE(store::IsNotLeader(fenced.status())) << fenced.status().ToString();
  auto lost = a.TryLeadership(ttl);
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(lost->leader);
  EXPECT_EQ(lost->term, term + 1);
  EXPECT_TRUE(b.ApplyPlan({}).ok());
}

// A busy leader cycles hundreds of times a second: a lease with more than half of its ttl
// left is not renewed (no write, no commit), and one past half is (decision 0036).
TEST(EngineTest, ALeaseIsRenewedOnlyOnceHalfOfItIsSpent) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore a(db, 2);
  const std::chrono::milliseconds ttl(1200);
  auto conn = store::PgConn::Connect(db);
  ASSERT_TRUE(conn.ok());
  auto expiry = [&] {
    return (*conn)->ExecScript("SELECT expires_at::text FROM leader_lease")->Text(0, 0);
  };
  auto first = a.TryLeadership(ttl);
  ASSERT_TRUE(first.ok() && first->leader);
  const std::string taken = expiry();
  auto soon = a.TryLeadership(ttl);
  ASSERT_TRUE(soon.ok());
  EXPECT_TRUE(soon->leader);
  EXPECT_EQ(soon->term, first->term);
  EXPECT_EQ(expiry(), taken) << "renewed with more than half of the lease left";
  std::this_thread::sleep_for(ttl / 2 + std::chrono::milliseconds(100));
  auto later = a.TryLeadership(ttl);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->leader);
  EXPECT_FALSE(later->acquired);
  EXPECT_EQ(later->term, first->term);
  EXPECT_GT(expiry(), taken) << "not renewed past half of the lease";
  // The writes stay fenced by the lease in the database, renewed or not.
  EXPECT_TRUE(a.ApplyPlan({}).ok());
}

// A lease that lapsed with nobody taking it is taken again, but as a new term: a term is
// one unbroken lease.
TEST(EngineTest, ALapsedLeaseIsRetakenUnderANewTerm) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore a(db, 2);
  auto first = a.TryLeadership(std::chrono::milliseconds(300));
  ASSERT_TRUE(first.ok() && first->leader);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto again = a.TryLeadership(std::chrono::milliseconds(300));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->leader);
  EXPECT_TRUE(again->acquired);
  EXPECT_EQ(again->term, first->term + 1);
  EXPECT_NE(again->lost_reason.find("expired"), std::string::npos) << again->lost_reason;
}

// A term taken over is named in the same words by the fence that refuses the old leader's
// writes and by the renewal that finds its term gone (one function, migration 0032).
TEST(EngineTest, TheFenceAndTheRenewalNameATakenOverTermAlike) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore a(db, 2);
  PgStore b(db, 2);
  auto first = a.TryLeadership(std::chrono::milliseconds(300));
  ASSERT_TRUE(first.ok() && first->leader);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto took = b.TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(took.ok() && took->acquired);
  auto conn = store::PgConn::Connect(db);
  ASSERT_TRUE(conn.ok());
  auto fenced = (*conn)->Exec("fence", "SELECT frugal_leader_fence($1, $2, $3)",
                              {std::to_string(first->term), "nobody", "1000"});
  ASSERT_FALSE(fenced.ok());
  auto lost = a.TryLeadership(std::chrono::milliseconds(300));
  ASSERT_TRUE(lost.ok());
  EXPECT_FALSE(lost->leader);
  const std::string expected = "taken over: term " + std::to_string(took->term) + " held by ";
  EXPECT_EQ(lost->lost_reason.rfind(expected, 0), 0u) << lost->lost_reason;
  EXPECT_NE(fenced.status().message().find("(" + lost->lost_reason + ")"), std::string::npos)
      << fenced.status().message() << " against " << lost->lost_reason;
}

TEST(EngineTest, CycleWritesTheWaitReason) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore store(db, 2);
  ASSERT_TRUE(store.Bootstrap(Sha256Hex("admin")).ok());
  auto admin = *store.Authenticate(Sha256Hex("admin"));
  store::SubmitRequest r;
  r.spec.command = {"true"};
  auto job = store.Submit(admin, r);
  policy::FifoPolicy fifo;
  Engine engine(store, fifo, {Seconds(3600), 100});
  ASSERT_TRUE(engine.RunCycleForTest().ok());
  EXPECT_EQ(store.GetJob(job->job.id, std::nullopt)->job.reason,
            "waiting: no live nodes are registered");
  EXPECT_EQ(engine.Stats().cycles, 1);
  EXPECT_TRUE(engine.Stats().leader);
  EXPECT_GE(engine.Stats().term, 1);
}

TEST(EngineTest, AKickRunsACycleWithoutWaitingForTheTimer) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore store(db, 2);
  policy::FifoPolicy fifo;
  // An hour-long interval: only the first cycle and kicks can run cycles here.
  Engine engine(store, fifo, {Seconds(3600), 100});
  engine.Start();
  auto wait_for_cycles = [&](std::int64_t n) {
    for (int i = 0; i < 500 && engine.Stats().cycles < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return engine.Stats().cycles;
  };
  EXPECT_GE(wait_for_cycles(1), 1);
  const auto before = engine.Stats().cycles;
  engine.Kick();
  EXPECT_GT(wait_for_cycles(before + 1), before);
  engine.Stop();
}

// A kicked cycle reads each team's first 100 pending jobs; the timer's cycle reads the whole
// window (decision 0036). Here the only job that fits is its team's 102nd.
TEST(EngineTest, AKickedCycleReadsTheHeadOfEachQueueAndTheTimersCycleTheWindow) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  PgStore store(db, 2);
  ASSERT_TRUE(store.Bootstrap(Sha256Hex("admin")).ok());
  auto admin = *store.Authenticate(Sha256Hex("admin"));
  ASSERT_TRUE(store.UpsertPool(testing::A100Pool("own", model::CapacityKind::kReserved, 0)).ok());
  ASSERT_TRUE(
      store.RegisterWorker(testing::A100Node("n1", 1), "own", Seconds(600), std::nullopt).ok());
  policy::FifoPolicy fifo;
  Engine engine(store, fifo, {Seconds(3600), {10000, 1000}});
  engine.Start();
  auto wait_for_cycles = [&](std::int64_t n) {
    for (int i = 0; i < 500 && engine.Stats().cycles < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return engine.Stats().cycles;
  };
  ASSERT_GE(wait_for_cycles(1), 1);  // the first cycle, with nothing queued
  auto submit = [&](int gpus) {
    store::SubmitRequest r;
    r.spec.command = {"true"};
    r.spec.gpus = gpus;
    return store.Submit(admin, r)->job.id;
  };
  for (int i = 0; i < 101; ++i) submit(2);  // none fits the 1-GPU node
  const model::JobId small = submit(1);
  const auto before = engine.Stats().cycles;
  engine.Kick();
  ASSERT_GT(wait_for_cycles(before + 1), before);
  auto job = store.GetJob(small, std::nullopt);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->job.state, model::JobState::kPending) << "a kicked cycle read past 100";
  EXPECT_EQ(job->job.reason, "");  // not read at all
  engine.Stop();
  ASSERT_TRUE(engine.RunCycleForTest().ok());  // as the timer's cycle runs
  EXPECT_EQ(store.GetJob(small, std::nullopt)->job.state, model::JobState::kRunning);
}

TEST(EngineTest, UnreachableDatabaseIsReportedNotFatal) {
  // A socket directory where nothing listens.
  PgStore store("host=/nonexistent-frugal port=1 user=frugal dbname=x", 1);
  policy::FifoPolicy fifo;
  Engine engine(store, fifo, {Seconds(3600), 100});
  Status st = engine.RunCycleForTest();
  EXPECT_EQ(st.code(), StatusCode::kUnavailable);
  EXPECT_FALSE(engine.Stats().last_error.empty());
}

}  // namespace
}  // namespace frugal::engine
