// PgConn's pipeline and InTransaction's begin script, sent with the first statement
// (decision 0054), on a real PostgreSQL.
#include "scheduler/store/pg/pg_conn.h"

#include <gtest/gtest.h>

#include "scheduler/store/cycle_store.h"
#include "tests/testing/test_postgres.h"

namespace frugal::store {
namespace {

std::unique_ptr<PgConn> Connect() {
  auto c = PgConn::Connect(testing::TestPostgres::Get().NewEmptyDatabase());
  EXPECT_TRUE(c.ok()) << c.status().ToString();
  return std::move(c).value();
}

TEST(PgConnTest, PipelineRunsStatementsInOrderAndPreparesEachOnce) {
  auto c = Connect();
  ASSERT_TRUE(c->ExecScript("CREATE TABLE t (v int)").ok());
  const std::vector<PgStatement> statements = {
      {"insert_v", "INSERT INTO t VALUES ($1::int)", {"1"}},
      {"insert_v", "INSERT INTO t VALUES ($1::int)", {"2"}},
      {"sum_v", "SELECT sum(v), count(*) FROM t", {}},
      {"echo", "SELECT $1::text, $2::text IS NULL", {"x", std::nullopt}}};
  for (int round = 1; round <= 2; ++round) {
    auto r = c->ExecPipeline(statements);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->size(), 4u);
    // The second statement saw the first's row: they ran in order.
    EXPECT_EQ((*r)[2].Int(0, 0), 3 * round);
    EXPECT_EQ((*r)[2].Int(0, 1), 2 * round);
    EXPECT_EQ((*r)[3].Text(0, 0), "x");
    EXPECT_TRUE((*r)[3].Bool(0, 1));
  }
  // Prepared once each, the first time: the second round found them prepared.
  auto prepared = c->ExecScript("SELECT count(*) FROM pg_prepared_statements");
  ASSERT_TRUE(prepared.ok());
  EXPECT_EQ(prepared->Int(0, 0), 3);
  EXPECT_TRUE(c->reusable());
}

TEST(PgConnTest, APipelineFailsAtItsFirstFailureAndLeavesTheConnectionUsable) {
  auto c = Connect();
  ASSERT_TRUE(c->ExecScript("CREATE TABLE t (v int CHECK (v > 0))").ok());
  ASSERT_TRUE(c->ExecScript("BEGIN").ok());
  auto r = c->ExecPipeline({{"insert_v", "INSERT INTO t VALUES ($1::int)", {"1"}},
                            {"insert_v", "INSERT INTO t VALUES ($1::int)", {"-1"}},
                            {"divide", "SELECT 1 / 0", {}}});
  // The check's violation, not the division the server skipped after it.
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << r.status().ToString();
  EXPECT_NE(r.status().message().find("insert_v"), std::string::npos) << r.status().ToString();
  EXPECT_TRUE(c->healthy());
  ASSERT_TRUE(c->ExecScript("ROLLBACK").ok());
  // Out of pipeline mode, in step with the server: a plain statement answers as before.
  auto count = c->Exec("count_t", "SELECT count(*) FROM t");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(count->Int(0, 0), 0);
  // A statement that cannot be prepared fails the pipeline with its own name, and stays
  // unprepared; the valid one beside it was prepared and runs.
  auto bad =
      c->ExecPipeline({{"good", "SELECT 7", {}}, {"bad", "SELEC 1", {}}, {"good", "SELECT 7", {}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad"), std::string::npos) << bad.status().ToString();
  auto again = c->ExecPipeline({{"good", "SELECT 7", {}}, {"bad", "SELECT 8", {}}});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ((*again)[0].Int(0, 0), 7);
  EXPECT_EQ((*again)[1].Int(0, 0), 8);
  EXPECT_TRUE(c->reusable());
}

TEST(PgConnTest, APipelineRefusesNulLikeExec) {
  auto c = Connect();
  auto r = c->ExecPipeline({{"echo", "SELECT $1::text", {std::string("a\0b", 3)}}});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(c->reusable());
}

TEST(PgConnTest, InTransactionBeginsWithItsScript) {
  PgPool pool(testing::TestPostgres::Get().NewEmptyDatabase(), 1);
  auto r = InTransaction<std::string>(
      pool,
      "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET LOCAL plan_cache_mode = "
      "force_generic_plan",
      [](PgConn& c) -> StatusOr<std::string> {
        ASSIGN_OR_RETURN(auto p, c.ExecPipeline({{"iso", "SHOW transaction_isolation", {}},
                                                 {"ro", "SHOW transaction_read_only", {}},
                                                 {"mode", "SHOW plan_cache_mode", {}}}));
        return p[0].Text(0, 0) + "," + p[1].Text(0, 0) + "," + p[2].Text(0, 0);
      });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, "repeatable read,on,force_generic_plan");
  // SET LOCAL ended with the transaction.
  auto after = InTransaction<std::string>(pool, [](PgConn& c) -> StatusOr<std::string> {
    ASSIGN_OR_RETURN(auto m, c.Exec("mode", "SHOW plan_cache_mode"));
    return m.Text(0, 0);
  });
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(*after, "auto");
}

// The deferred BEGIN goes with whichever call comes first, and what follows is in the same
// transaction: one transaction id throughout, the script's settings in force.
TEST(PgConnTest, TheDeferredBeginGoesWithTheFirstCallOfEachKind) {
  PgPool pool(testing::TestPostgres::Get().NewEmptyDatabase(), 1);
  const char* kBegin = "BEGIN ISOLATION LEVEL REPEATABLE READ; SET LOCAL work_mem = '7MB'";
  const std::string kInBlock =
      "SELECT txid_current()::text || ',' ||"
      " current_setting('transaction_isolation') || ',' ||"
      " current_setting('work_mem')";
  for (const std::string first : {"exec", "pipeline", "script"}) {
    auto r = InTransaction<std::string>(pool, kBegin, [&](PgConn& c) -> StatusOr<std::string> {
      EXPECT_TRUE(c.begin_pending());
      std::string seen;
      if (first == "exec") {
        ASSIGN_OR_RETURN(auto a, c.Exec("in_block", kInBlock));
        seen = a.Text(0, 0);
      } else if (first == "pipeline") {
        ASSIGN_OR_RETURN(auto a, c.ExecPipeline({{"in_block", kInBlock, {}}}));
        seen = a[0].Text(0, 0);
      } else {
        ASSIGN_OR_RETURN(auto a, c.ExecScript(kInBlock));
        seen = a.Text(0, 0);
      }
      EXPECT_FALSE(c.begin_pending());
      EXPECT_EQ(c.round_trips(), 1);
      ASSIGN_OR_RETURN(auto b, c.Exec("in_block", kInBlock));
      if (b.Text(0, 0) != seen) return Internal(first + ": " + seen + " then " + b.Text(0, 0));
      return seen;
    });
    ASSERT_TRUE(r.ok()) << first << ": " << r.status().ToString();
    EXPECT_NE(r->find(",repeatable read,7MB"), std::string::npos) << first << ": " << *r;
  }
}

// Table t of positive ints, for the tests that make a statement fail on purpose.
bool CreatePositiveTable(PgPool& pool) {
  return InTransaction<int>(
             pool,
             [](PgConn& c) -> StatusOr<int> {
               RETURN_IF_ERROR(c.ExecScript("CREATE TABLE t (v int CHECK (v > 0))").status());
               return 0;
             })
      .ok();
}

// A failure in the round trip that carried BEGIN rolls back what that round trip wrote, and
// a transaction in which nothing was sent is neither begun nor committed.
TEST(PgConnTest, TheDeferredBeginRollsBackWithItsFirstStatementAndCostsNothingUnsent) {
  PgPool pool(testing::TestPostgres::Get().NewEmptyDatabase(), 1);
  ASSERT_TRUE(CreatePositiveTable(pool));
  auto failed = InTransaction<int>(pool, [](PgConn& c) -> StatusOr<int> {
    ASSIGN_OR_RETURN(auto r,
                     c.ExecPipeline({{"insert_v", "INSERT INTO t VALUES ($1::int)", {"1"}},
                                     {"insert_v", "INSERT INTO t VALUES ($1::int)", {"-1"}}}));
    return static_cast<int>(r.size());
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kFailedPrecondition) << failed.status().ToString();
  // A later write commits: the first insert was rolled back, not left in a transaction.
  auto count = InTransaction<std::int64_t>(pool, [](PgConn& c) -> StatusOr<std::int64_t> {
    RETURN_IF_ERROR(c.Exec("insert_v", "INSERT INTO t VALUES ($1::int)", {"2"}).status());
    ASSIGN_OR_RETURN(auto r, c.Exec("count_t", "SELECT count(*), sum(v) FROM t"));
    return r.Int(0, 0) * 100 + r.Int(0, 1);
  });
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, 102);
  // Nothing sent: the answer comes back as it is, and the one pooled connection is idle.
  auto nothing = InTransaction<int>(pool, [](PgConn& c) -> StatusOr<int> {
    EXPECT_TRUE(c.begin_pending());
    return 5;
  });
  ASSERT_TRUE(nothing.ok());
  EXPECT_EQ(*nothing, 5);
  auto refused = InTransaction<int>(pool, [](PgConn&) -> StatusOr<int> {
    return InvalidArgument("refused before any statement");
  });
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  EXPECT_TRUE((**lease).reusable());
  EXPECT_FALSE((**lease).begin_pending());
  auto open = (**lease).ExecScript(
      "SELECT count(*) FROM pg_stat_activity"
      " WHERE datname = current_database() AND state LIKE 'idle in%'");
  ASSERT_TRUE(open.ok());
  EXPECT_EQ(open->Int(0, 0), 0);
}

// A COMMIT at the end of fn's last pipeline ends the transaction in that round trip
// (decision 0057): what was written is committed and the connection is idle again; a
// failure ahead of it in the pipeline still rolls back.
TEST(PgConnTest, ACommitInTheLastPipelineEndsTheTransaction) {
  PgPool pool(testing::TestPostgres::Get().NewEmptyDatabase(), 1);
  ASSERT_TRUE(CreatePositiveTable(pool));
  auto committed = InTransaction<int>(pool, [](PgConn& c) -> StatusOr<int> {
    ASSIGN_OR_RETURN(auto r, c.ExecPipeline({{"insert_v", "INSERT INTO t VALUES ($1::int)", {"3"}},
                                             {"commit", "COMMIT", {}}}));
    EXPECT_EQ(c.round_trips(), 1);
    EXPECT_TRUE(c.reusable()) << "the pipeline's COMMIT left a transaction open";
    return static_cast<int>(r.size());
  });
  ASSERT_TRUE(committed.ok()) << committed.status().ToString();
  EXPECT_EQ(*committed, 2);
  auto failed = InTransaction<int>(pool, [](PgConn& c) -> StatusOr<int> {
    ASSIGN_OR_RETURN(auto r, c.ExecPipeline({{"insert_v", "INSERT INTO t VALUES ($1::int)", {"4"}},
                                             {"insert_v", "INSERT INTO t VALUES ($1::int)", {"-4"}},
                                             {"commit", "COMMIT", {}}}));
    return static_cast<int>(r.size());
  });
  ASSERT_FALSE(failed.ok());
  auto other = PgConn::Connect(pool.conninfo());
  ASSERT_TRUE(other.ok()) << other.status().ToString();
  auto sum = (*other)->ExecScript("SELECT count(*), sum(v) FROM t");
  ASSERT_TRUE(sum.ok()) << sum.status().ToString();
  EXPECT_EQ(sum->Int(0, 0), 1) << "only the committed row is there";
  EXPECT_EQ(sum->Int(0, 1), 3);
  auto lease = pool.Acquire();
  ASSERT_TRUE(lease.ok());
  EXPECT_TRUE((**lease).reusable());
}

// The leader fence (migration 0031) raises NotLeader's error for a term not held, and the
// server skips what was sent behind it: a deposed leader's pipeline takes no lock even
// before its transaction is rolled back.
TEST(PgConnTest, AFailedLeaderFenceSkipsWhatWasSentBehindIt) {
  const std::string db = testing::TestPostgres::Get().NewDatabase();
  auto c = PgConn::Connect(db);
  auto other = PgConn::Connect(db);
  ASSERT_TRUE(c.ok() && other.ok());
  ASSERT_TRUE((*c)->ExecScript("BEGIN").ok());
  auto r = (*c)->ExecPipeline(
      {{"fence", "SELECT frugal_leader_fence($1, $2, $3)", {"999", "nobody", "6000"}},
       {"lock", "SELECT pg_advisory_xact_lock(4242)", {}}});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsNotLeader(r.status())) << r.status().ToString();
  EXPECT_NE(r.status().message().find("term 999 has ended"), std::string::npos)
      << r.status().ToString();
  // Still inside that transaction: the lock behind the fence was never taken.
  auto probe = (*other)->ExecScript("SELECT pg_try_advisory_lock(4242)");
  ASSERT_TRUE(probe.ok()) << probe.status().ToString();
  EXPECT_TRUE(probe->Bool(0, 0));
  EXPECT_TRUE((*c)->ExecScript("ROLLBACK").ok());
}

}  // namespace
}  // namespace frugal::store
