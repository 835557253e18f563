// The exec provider's instances against a real PostgreSQL (decision 0029): compare-and-set
// changes, the audit trail, what an instance costs, and its node going with it.
#include <gtest/gtest.h>

#include <thread>

#include "common/crypto.h"

#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class InstanceStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    // $3.60 per GPU-hour: 2 GPUs cost $0.002 a second.
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("spot", model::CapacityKind::kSpot, 3'600'000)).ok());
  }
  InstanceStore& instances() { return *store_; }
};

TEST_F(InstanceStoreTest, AnInstanceLivesThroughCompareAndSetChangesAndIsAudited) {
  auto added = instances().AddInstance("spot", "spot-a1", 2, "");
  ASSERT_TRUE(added.ok()) << added.status().ToString();
  EXPECT_EQ(added->state, InstanceState::kCreating);
  EXPECT_EQ(added->rate_micros_per_gpu_hour, 3'600'000);
  EXPECT_EQ(added->cost_micros, 0);  // not created yet: nothing billed
  // A second instance for the same node name is refused while the first is not gone.
  EXPECT_EQ(instances().AddInstance("spot", "spot-a1", 2, "").status().code(),
            StatusCode::kConflict);
  EXPECT_EQ(instances().AddInstance("nope", "x-1", 2, "").status().code(), StatusCode::kNotFound);

  auto booting = instances().ChangeInstance(added->id, {InstanceState::kCreating},
                                            {InstanceState::kBooting, "i-0abc", "", ""});
  ASSERT_TRUE(booting.ok()) << booting.status().ToString();
  EXPECT_EQ(booting->instance_id, "i-0abc");
  EXPECT_TRUE(booting->created_at.has_value());
  // A change from a state it is not in loses: the other change came first.
  EXPECT_EQ(instances()
                .ChangeInstance(added->id, {InstanceState::kCreating},
                                {InstanceState::kGone, "", "stockout", ""})
                .status()
                .code(),
            StatusCode::kFailedPrecondition);

  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto gone = instances().ChangeInstance(added->id, {InstanceState::kBooting},
                                         {InstanceState::kGone, "", "vanished", ""});
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->reason, "vanished");
  ASSERT_TRUE(gone->ended_at.has_value());
  // F over [created, ended] at 2 GPUs x $3.60/h: at least 1.1 s, so at least $0.0022.
  EXPECT_GE(gone->cost_micros, 2200);
  EXPECT_LT(gone->cost_micros, 2 * 3'600'000 / 3600 * 10);

  // Gone: no longer listed by default, listed with ended_since, and its name is free again.
  EXPECT_TRUE(instances().ListInstances(std::nullopt)->empty());
  ASSERT_EQ(instances().ListInstances(Timestamp{})->size(), 1u);
  EXPECT_TRUE(instances().AddInstance("spot", "spot-a1", 2, "").ok());

  AuditFilter f;
  f.limit = 100;
  auto audit = store_->ListAudit(f);
  ASSERT_TRUE(audit.ok());
  std::vector<std::string> actions;
  for (const auto& e : *audit)
    if (e.subject == "instance/spot-a1") actions.push_back(e.action);
  EXPECT_NE(std::find(actions.begin(), actions.end(), "instance.create"), actions.end());
  EXPECT_NE(std::find(actions.begin(), actions.end(), "instance.created"), actions.end());
  EXPECT_NE(std::find(actions.begin(), actions.end(), "instance.gone"), actions.end());
}

TEST_F(InstanceStoreTest, ALeakIsRecordedAsDestroyingAndAStockoutAsAFailedCreate) {
  auto leak = instances().AddInstance("spot", "stray", 1, "i-stray");
  ASSERT_TRUE(leak.ok()) << leak.status().ToString();
  EXPECT_TRUE(leak->leaked);
  EXPECT_EQ(leak->state, InstanceState::kDestroying);
  EXPECT_EQ(leak->reason, "leak");
  EXPECT_TRUE(leak->created_at.has_value());  // it bills from when we first saw it

  auto c = instances().AddInstance("spot", "spot-b2", 1, "");
  ASSERT_TRUE(c.ok());
  auto failed = instances().ChangeInstance(
      c->id, {InstanceState::kCreating},
      {InstanceState::kGone, "", "stockout", "exit 75: InsufficientInstanceCapacity"});
  ASSERT_TRUE(failed.ok());
  EXPECT_EQ(failed->cost_micros, 0);
  EXPECT_EQ(failed->detail, "exit 75: InsufficientInstanceCapacity");
  // A cloud id that is not one printable word is refused, not stored.
  auto d = instances().AddInstance("spot", "spot-c3", 1, "");
  EXPECT_FALSE(instances()
                   .ChangeInstance(d->id, {InstanceState::kCreating},
                                   {InstanceState::kBooting, "bad id", "", ""})
                   .ok());
}

TEST_F(InstanceStoreTest, EndingAnInstanceRemovesItsIdleNode) {
  auto r = store_->RegisterWorker(testing::A100Node("spot-n1", 1), "spot", Seconds(60),
                                  std::nullopt);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto x = instances().AddInstance("spot", "spot-n1", 1, "");
  ASSERT_TRUE(instances()
                  .ChangeInstance(x->id, {InstanceState::kCreating},
                                  {InstanceState::kBooting, "i-1", "", ""})
                  .ok());
  ASSERT_TRUE(instances()
                  .ChangeInstance(x->id, {InstanceState::kBooting},
                                  {InstanceState::kGone, "", "idle", ""})
                  .ok());
  auto nodes = store_->ListNodes();
  ASSERT_TRUE(nodes.ok());
  for (const auto& n : *nodes) EXPECT_NE(n.name, "spot-n1") << "node still listed";
}

}  // namespace
}  // namespace frugal::store

namespace frugal::store {
namespace {

// The hole this closes: a job on a cloud instance can read the instance's user data (where
// the join token travels) from the metadata service; with a shared join token it could
// register a node of any name and be handed other teams' jobs.
TEST_F(InstanceStoreTest, AnInstanceJoinTokenRegistersItsOwnNodeOnceAndDiesWithIt) {
  const std::string token = "frg_instance-token-for-test";
  auto x = instances().AddInstance("spot", "spot-j1", 1, "", Sha256Hex(token));
  ASSERT_TRUE(x.ok()) << x.status().ToString();
  auto who = store_->Authenticate(Sha256Hex(token));
  ASSERT_TRUE(who.ok()) << who.status().ToString();
  EXPECT_EQ(who->role, Role::kWorker);

  // Another node name: refused, and the token still works for its own node.
  auto other = store_->RegisterWorker(testing::A100Node("spot-evil", 1), "spot", Seconds(60),
                                      std::nullopt, who->token_id);
  EXPECT_EQ(other.status().code(), StatusCode::kPermissionDenied) << other.status().ToString();
  EXPECT_NE(other.status().message().find("spot-j1"), std::string::npos);
  auto own = store_->RegisterWorker(testing::A100Node("spot-j1", 1), "spot", Seconds(60),
                                    std::nullopt, who->token_id);
  ASSERT_TRUE(own.ok()) << own.status().ToString();
  // Used once: it no longer authenticates at all.
  EXPECT_FALSE(store_->Authenticate(Sha256Hex(token)).ok());

  // A second instance's token dies when its instance ends, even if never used.
  const std::string unused = "frg_instance-token-never-used";
  auto y = instances().AddInstance("spot", "spot-j2", 1, "", Sha256Hex(unused));
  ASSERT_TRUE(y.ok());
  ASSERT_TRUE(store_->Authenticate(Sha256Hex(unused)).ok());
  ASSERT_TRUE(instances()
                  .ChangeInstance(y->id, {InstanceState::kCreating},
                                  {InstanceState::kGone, "", "stockout", ""})
                  .ok());
  EXPECT_FALSE(store_->Authenticate(Sha256Hex(unused)).ok());
}

}  // namespace
}  // namespace frugal::store
