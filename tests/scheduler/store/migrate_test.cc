#include <gtest/gtest.h>

#include <thread>

#include "scheduler/store/pg/migrations.h"
#include "tests/testing/test_postgres.h"

namespace frugal::store {
namespace {

int SchemaVersion(PgConn& c) {
  auto r = c.ExecScript("SELECT max(version) FROM schema_migrations");
  return r.ok() ? static_cast<int>(r->Int(0, 0)) : -1;
}

TEST(MigrateTest, AppliesAllOnceAndIsIdempotent) {
  auto conn = PgConn::Connect(testing::TestPostgres::Get().NewEmptyDatabase());
  ASSERT_TRUE(conn.ok());
  auto first = Migrate(**conn);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, static_cast<int>(AllMigrations().size()));
  EXPECT_EQ(*Migrate(**conn), 0);
  EXPECT_EQ(SchemaVersion(**conn), AllMigrations().back().version);
}

TEST(MigrateTest, TwoConcurrentMigratorsApplyEachMigrationOnce) {
  const std::string db = testing::TestPostgres::Get().NewEmptyDatabase();
  StatusOr<int> a = 0, b = 0;
  std::thread t1([&] { a = Migrate(**PgConn::Connect(db)); });
  std::thread t2([&] { b = Migrate(**PgConn::Connect(db)); });
  t1.join();
  t2.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  // The advisory lock serialises them: one applies everything, the other nothing.
  EXPECT_EQ(*a + *b, static_cast<int>(AllMigrations().size()));
}

TEST(MigrateTest, RefusesADatabaseNewerThanTheBinary) {
  auto conn = PgConn::Connect(testing::TestPostgres::Get().NewDatabase());
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE((*conn)->ExecScript("INSERT INTO schema_migrations (version, name) VALUES (9999, "
                                  "'9999_from_the_future')")
                  .ok());
  auto r = Migrate(**conn);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("9999"), std::string::npos);
}

}  // namespace
}  // namespace frugal::store
