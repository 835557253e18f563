// The engine's cycle against a real PostgreSQL, with the fifo policy.
#include "scheduler/engine/engine.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/crypto.h"
#include "scheduler/policy/fifo_policy.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/test_postgres.h"

namespace frugal::engine {
namespace {

using store::PgStore;

TEST(EngineTest, OnlyOneStorePerDatabaseLeads) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  auto a = std::make_unique<PgStore>(db, 2);
  PgStore b(db, 2);
  EXPECT_TRUE(*a->TryLeadership());
  EXPECT_TRUE(*a->TryLeadership());  // keeps it
  EXPECT_FALSE(*b.TryLeadership());
  a.reset();  // the leader's session ends: its lock is released as its backend exits
  bool took_over = false;
  for (int i = 0; i < 250 && !took_over; ++i) {
    took_over = *b.TryLeadership();
    if (!took_over) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(took_over);
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
