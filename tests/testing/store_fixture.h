// The common start of a store test (tests/scheduler/store): a fresh migrated database on
// the binary's throwaway PostgreSQL (test_postgres.h), a PgStore on it, bootstrapped, and
// the admin's principal. Fixtures derive from StoreTest and add their own pools and nodes,
// most of them 80 GB a100s (A100Pool, A100Node).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "common/money.h"
#include "scheduler/model/pool.h"
#include "scheduler/store/pg/pg_store.h"

namespace frugal::testing {

class StoreTest : public ::testing::Test {
 protected:
  // A new database, a PgStore with 4 connections on it that holds the leader lease for an
  // hour, Bootstrap with the hash of "admin" and that token's principal in admin_. A failing step fails the test fatally, so
  // a derived SetUp starts with ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp()).
  void SetUp() override;

  // What a worker would present about `attempt`: its node and its fence, read from the
  // database (a worker has them from its credential and the assignment).
  store::AttemptAuth AuthOf(model::AttemptId attempt);
  // The id of node `name` (a worker's credential resolves to it).
  model::NodeId NodeIdOf(const std::string& name);

  std::string conninfo_;  // the test's own database, for extra PgConn connections
  std::unique_ptr<store::PgStore> store_;
  store::Principal admin_;
};

// An 80 GB a100 pool of `kind` at `price` micro-dollars per GPU-hour, capped at `max_gpus`
// GPUs; every other field keeps its default.
model::Pool A100Pool(const std::string& name, model::CapacityKind kind, Micros price,
                     int max_gpus = 64);

// An unregistered 80 GB a100 node with `gpus` GPUs, for PgStore::RegisterWorker.
model::Node A100Node(const std::string& name, int gpus);

}  // namespace frugal::testing
