// The store learns each spot pool's availability chain (decision 0023): spells derived
// from node lives, the background refit, the admin's import, and what LoadPools returns.
// Ticks are 180 s; bins start at ages 0, 1, 3, 6, 10, 17, 27 and 44 ticks.
#include <gtest/gtest.h>

#include <cstdio>

#include "scheduler/model/availability_history.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class AvailabilityStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    model::Pool spot = testing::A100Pool("spot", model::CapacityKind::kSpot, 900'000);
    spot.preemption_prior_per_node_hour = 0.5;
    ASSERT_TRUE(store_->UpsertPool(spot).ok());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, 3'000'000)).ok());
  }

  Registration Register(const std::string& name) {
    auto r = store_->RegisterWorker(testing::A100Node(name, 4), "spot", Seconds(60), std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : Registration{};
  }

  // SQL the store has no reason to offer: moving time for a test.
  void Sql(const std::string& sql) {
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->ExecScript(sql).ok()) << sql;
  }

  // A node that lived from `from` to `to` minutes ago: its lease lapsed a minute after its
  // last heartbeat (the sweep has not declared it lost yet).
  void Lived(const std::string& name, int from, int to) {
    Sql("UPDATE nodes SET registered_at = now() - interval '" + std::to_string(from) +
        " minutes', last_heartbeat_at = now() - interval '" + std::to_string(to) +
        " minutes', lease_expires_at = now() - interval '" + std::to_string(to - 1) +
        " minutes' WHERE name = '" + name + "'");
  }

  model::Pool PoolNamed(const std::string& name) {
    auto pools = store_->ListPools();
    EXPECT_TRUE(pools.ok());
    for (const auto& p : *pools)
      if (p.name == name) return p;
    ADD_FAILURE() << "no pool " << name;
    return {};
  }
};

TEST_F(AvailabilityStoreTest, NoFitYetMeansNoModelAndStateFollowsNodes) {
  // (a) Nothing fitted, no node ever, no stockout: no model, and no evidence against
  // capacity, so assumed up (a fresh spell).
  auto p = PoolNamed("spot");
  EXPECT_EQ(p.availability, nullptr);
  EXPECT_TRUE(p.availability_now.up);
  EXPECT_TRUE(p.availability_now.assumed);
  EXPECT_EQ(p.availability_now.spell_seconds, 0);
  // (b) A live node: up, since it registered a moment ago.
  Register("a");
  p = PoolNamed("spot");
  EXPECT_TRUE(p.availability_now.up);
  EXPECT_FALSE(p.availability_now.assumed);
  EXPECT_LT(p.availability_now.spell_seconds, 5);
  EXPECT_EQ(p.availability, nullptr);  // still not refitted
  EXPECT_EQ(PoolNamed("od").availability, nullptr);
}

TEST_F(AvailabilityStoreTest, RefitCountsSpellsOfNodeLivesWithNoticesAndGaps) {
  auto d = Register("d");
  for (const char* n : {"a", "b", "c"}) Register(n);
  // Minutes ago: a 120-90, b 100-60 (overlap: one up spell of 60 min = 20 ticks); no node
  // 60-45 (down 5 ticks); c 45-28 but reclaim notice at 42 (up 1 tick: the notice ends
  // it, not the last heartbeat); none 42-12 (down 10 ticks); d since 12, live (up 4 ticks,
  // still going on).
  Lived("a", 120, 90);
  Lived("b", 100, 60);
  Lived("c", 45, 28);
  Sql("UPDATE nodes SET notice_at = now() - interval '42 minutes' WHERE name = 'c';"
      "UPDATE nodes SET registered_at = now() - interval '12 minutes' WHERE name = 'd'");

  // A lapsed lease ends a life whether or not the sweep has declared the node lost yet.
  auto before_sweep = store_->RefitAvailability();
  ASSERT_TRUE(before_sweep.ok()) << before_sweep.status().ToString();
  auto lost = store_->SweepLostNodes();
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  EXPECT_EQ(lost->size(), 3u);  // a, b, c
  auto refit = store_->RefitAvailability();
  ASSERT_TRUE(refit.ok()) << refit.status().ToString();
  ASSERT_EQ(refit->size(), 1u);  // spot pools only
  EXPECT_EQ((*refit)[0].pool, "spot");
  EXPECT_EQ((*refit)[0].lives, 4);
  EXPECT_DOUBLE_EQ((*refit)[0].observed_ticks, 20 + 5 + 1 + 10 + 4);
  EXPECT_DOUBLE_EQ((*before_sweep)[0].observed_ticks, (*refit)[0].observed_ticks);

  auto p = PoolNamed("spot");
  ASSERT_NE(p.availability, nullptr);
  const auto& m = *p.availability;
  EXPECT_EQ(m.tick_seconds, 180);
  EXPECT_DOUBLE_EQ(m.ObservedTicks(), 40);
  // Up spells of 20 (ended at age 19, bin 5 from 17), 1 (age 0, bin 0) and 4 (going on: no
  // end counted). Down spells of 5 (age 4, bin 2 from 3) and 10 (age 9, bin 3 from 6).
  EXPECT_DOUBLE_EQ(m.flip[m.State(true, 19)], 1);
  EXPECT_DOUBLE_EQ(m.flip[m.State(true, 0)], 1);
  EXPECT_DOUBLE_EQ(m.flip[m.State(false, 4)], 1);
  EXPECT_DOUBLE_EQ(m.flip[m.State(false, 9)], 1);
  double up_flips = 0, down_flips = 0;
  for (int s = 0; s < m.states(); ++s) (m.IsUp(s) ? up_flips : down_flips) += m.flip[s];
  EXPECT_DOUBLE_EQ(up_flips, 2);
  EXPECT_DOUBLE_EQ(down_flips, 2);
  // Spells that pass age 0 on to age 1: up 20 and 4, down 5 and 10.
  EXPECT_DOUBLE_EQ(m.onward[m.State(true, 0)], 2);
  EXPECT_DOUBLE_EQ(m.onward[m.State(false, 0)], 2);
  // Up now, for d's 12 minutes.
  EXPECT_TRUE(p.availability_now.up);
  EXPECT_NEAR(static_cast<double>(p.availability_now.spell_seconds), 720, 5);
  // The cycle's snapshot carries the same.
  auto snap = store_->LoadSnapshot({10, 10});
  ASSERT_TRUE(snap.ok());
  ASSERT_NE(snap->pools[0].availability, nullptr);
  EXPECT_DOUBLE_EQ(snap->pools[0].availability->ObservedTicks(), 40);
  EXPECT_EQ(snap->pools[1].availability, nullptr);  // on-demand

  // d gets a reclaim notice: down from now on, the last up spell over.
  HeartbeatRequest hb;
  hb.node = "d";
  hb.node_id = NodeIdOf("d");
  hb.lease_epoch = d.lease_epoch;
  hb.notice = true;
  ASSERT_TRUE(store_->Heartbeat(hb, Seconds(60)).ok());
  p = PoolNamed("spot");
  EXPECT_FALSE(p.availability_now.up);
  EXPECT_LT(p.availability_now.spell_seconds, 5);
}

TEST_F(AvailabilityStoreTest, ImportSeedsTheModelAndIsAudited) {
  auto counts = model::AvailabilityModel::Empty(180, 8);
  counts.AddSpell(true, 10, true);  // 10 ticks up, then reclaimed
  counts.AddSpell(false, 2, false);
  auto a = store_->ImportAvailability(admin_, "spot", counts, "trace.csv");
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_DOUBLE_EQ(a->imported_ticks, 12);
  EXPECT_DOUBLE_EQ(a->observed_ticks, 0);
  EXPECT_EQ(a->imported_source, "trace.csv");
  ASSERT_TRUE(a->fitted_at.has_value());  // refitted at once
  ASSERT_TRUE(a->model.has_value());
  EXPECT_DOUBLE_EQ(a->model->ObservedTicks(), 12);

  // Observed lives add to the import at the next refit: a node up 30 min (10 ticks),
  // lost 15 min ago (down 5 ticks, going on).
  Register("a");
  Lived("a", 45, 15);
  ASSERT_TRUE(store_->RefitAvailability().ok());
  auto g = store_->GetAvailability("spot");
  ASSERT_TRUE(g.ok());
  EXPECT_DOUBLE_EQ(g->observed_ticks, 15);
  EXPECT_DOUBLE_EQ(g->imported_ticks, 12);
  EXPECT_DOUBLE_EQ(g->model->ObservedTicks(), 27);
  EXPECT_FALSE(g->now.up);
  EXPECT_NEAR(static_cast<double>(g->now.spell_seconds), 900, 5);

  AuditFilter f;
  f.action = "pool.availability_import";
  auto audit = store_->ListAudit(f);
  ASSERT_TRUE(audit.ok());
  EXPECT_EQ(audit->size(), 1u);
}

TEST_F(AvailabilityStoreTest, ImportRefusesUnknownNonSpotAndMisshapenCounts) {
  auto counts = model::AvailabilityModel::Empty(180, 8);
  counts.AddSpell(true, 3, false);
  EXPECT_EQ(store_->ImportAvailability(admin_, "nope", counts, "x").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store_->ImportAvailability(admin_, "od", counts, "x").status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->GetAvailability("od").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->ImportAvailability(admin_, "spot", model::AvailabilityModel::Empty(60, 8), "x")
                .status()
                .code(),
            StatusCode::kInvalidArgument);
}

// Also the measurement of decision 0023's refit time: 10,000 node lives in one pool.
// A gang's chain (decision 0032): for each gang size jobs ask for, the spells in which
// that many of the pool's nodes were alive at once, from the same lives.
TEST_F(AvailabilityStoreTest, RefitFitsAChainPerGangSizeInUseFromOverlappingLives) {
  for (const char* n : {"a", "b"}) Register(n);
  // Minutes ago: a 120-60, b 105-75. One at a time: up 120-60 (20 ticks), then down 60
  // to now (20 ticks). Both at once: up 105-75 (10 ticks, b's lapse ends it), then down
  // until two are alive again, 75 to now (25 ticks).
  Lived("a", 120, 60);
  Lived("b", 105, 75);
  ASSERT_TRUE(store_->RefitAvailability().ok());
  EXPECT_TRUE(PoolNamed("spot").gang_availability.empty());  // no gang asks yet
  SubmitRequest r;
  r.spec.command = {"torchrun", "train.py"};
  r.spec.nodes = 2;
  r.spec.gpus = 8;
  auto gang = store_->Submit(admin_, r);
  ASSERT_TRUE(gang.ok());
  ASSERT_TRUE(store_->RefitAvailability().ok());
  auto p = PoolNamed("spot");
  ASSERT_NE(p.availability, nullptr);
  EXPECT_DOUBLE_EQ(p.availability->ObservedTicks(), 40);
  ASSERT_EQ(p.gang_availability.size(), 1u);
  ASSERT_NE(p.gang_availability[2], nullptr);
  const auto& g = *p.gang_availability[2];
  EXPECT_DOUBLE_EQ(g.ObservedTicks(), 35);
  EXPECT_DOUBLE_EQ(g.flip[g.State(true, 9)], 1);  // the pair's spell ended at age 9
  EXPECT_DOUBLE_EQ(p.availability->flip[p.availability->State(true, 19)], 1);
  // The snapshot carries it, the same object while no count changes.
  auto snap = store_->LoadSnapshot({10, 10});
  ASSERT_TRUE(snap.ok());
  auto again = store_->LoadSnapshot({10, 10});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(snap->pools[0].gang_availability.count(2), 1u);
  EXPECT_DOUBLE_EQ(snap->pools[0].gang_availability.at(2)->ObservedTicks(), 35);
  EXPECT_EQ(snap->pools[0].gang_availability.at(2), again->pools[0].gang_availability.at(2));
  // Once no job asks for the size, the next refit drops its fit.
  ASSERT_TRUE(store_->CancelJob(gang->job.id, std::nullopt, "admin").ok());
  ASSERT_TRUE(store_->RefitAvailability().ok());
  EXPECT_TRUE(PoolNamed("spot").gang_availability.empty());
}

TEST_F(AvailabilityStoreTest, RefitOfTenThousandLivesCountsEveryTick) {
  // Node i lived 30 min (10 ticks) then the pool had none for 12 min (4 ticks): a 42-minute
  // cycle, the last one ending now. 10,000 x 14 = 140,000 ticks; every up spell ended, every
  // down spell but the last one too.
  Sql("INSERT INTO nodes (name, pool_id, gpus, gpu_type, gpu_mem_gb, lease_expires_at,"
      " registered_at, last_heartbeat_at, state) SELECT 'n' || i, p.id, 1, 'a100', 80,"
      " now() - (10000 - i) * interval '42 minutes' - interval '11 minutes',"
      " now() - (10001 - i) * interval '42 minutes',"
      " now() - (10000 - i) * interval '42 minutes' - interval '12 minutes', 'lost'"
      " FROM generate_series(1, 10000) i, pools p WHERE p.name = 'spot'");
  auto refit = store_->RefitAvailability();
  ASSERT_TRUE(refit.ok()) << refit.status().ToString();
  ASSERT_EQ(refit->size(), 1u);
  EXPECT_EQ((*refit)[0].lives, 10000);
  EXPECT_DOUBLE_EQ((*refit)[0].observed_ticks, 140000);
  std::printf("refit of one pool with 10000 node lives: %.1f ms\n", (*refit)[0].elapsed_ms);
  auto p = PoolNamed("spot");
  ASSERT_NE(p.availability, nullptr);
  double up_flips = 0, down_flips = 0;
  const auto& m = *p.availability;
  for (int s = 0; s < m.states(); ++s) (m.IsUp(s) ? up_flips : down_flips) += m.flip[s];
  EXPECT_DOUBLE_EQ(up_flips, 10000);
  EXPECT_DOUBLE_EQ(down_flips, 9999);
  EXPECT_FALSE(p.availability_now.up);
  EXPECT_NEAR(static_cast<double>(p.availability_now.spell_seconds), 720, 5);
}

TEST_F(AvailabilityStoreTest, AnIdleReleaseIsNoEvidenceAndAStockoutIsADownSpell) {
  // The exec provider's rows, minutes ago: a's instance destroyed as idle at 90.
  Register("a");
  Lived("a", 120, 90);
  const std::string pool = "(SELECT id FROM pools WHERE name = 'spot')";
  auto instance = [&](const std::string& node, int requested, int ended, const std::string& why) {
    Sql("INSERT INTO instances (pool_id, node_name, state, gpus, rate_micros_per_gpu_hour,"
        " requested_at, ended_at, reason) VALUES (" + pool + ", '" + node + "', 'gone', 4,"
        " 900000, now() - interval '" + std::to_string(requested) + " minutes', now() -"
        " interval '" + std::to_string(ended) + " minutes', '" + why + "')");
  };
  instance("a", 121, 90, "idle");
  ASSERT_TRUE(store_->SweepLostNodes().ok());
  // Released with nothing asked since: assumed up, not down for 90 minutes.
  auto p = PoolNamed("spot");
  EXPECT_TRUE(p.availability_now.up);
  EXPECT_TRUE(p.availability_now.assumed);
  auto refit = store_->RefitAvailability();
  ASSERT_TRUE(refit.ok()) << refit.status().ToString();
  // Only a's 30 minutes (10 ticks), cut rather than ended: no flip.
  EXPECT_DOUBLE_EQ((*refit)[0].observed_ticks, 10);
  p = PoolNamed("spot");
  ASSERT_NE(p.availability, nullptr);
  double flips = 0;
  for (double f : p.availability->flip) flips += f;
  EXPECT_DOUBLE_EQ(flips, 0);

  // A create refused for want of capacity 60 minutes ago: down since then.
  instance("s1", 61, 60, "stockout");
  instance("s2", 31, 30, "stockout");
  p = PoolNamed("spot");
  EXPECT_FALSE(p.availability_now.up);
  EXPECT_FALSE(p.availability_now.assumed);
  EXPECT_NEAR(static_cast<double>(p.availability_now.spell_seconds), 3600, 5);
  refit = store_->RefitAvailability();
  ASSERT_TRUE(refit.ok());
  EXPECT_DOUBLE_EQ((*refit)[0].observed_ticks, 10 + 20);  // the down spell goes on

  // b registers now: up again, and the down spell of 20 ticks has ended (age 19).
  Register("b");
  p = PoolNamed("spot");
  EXPECT_TRUE(p.availability_now.up);
  EXPECT_FALSE(p.availability_now.assumed);
  refit = store_->RefitAvailability();
  ASSERT_TRUE(refit.ok());
  p = PoolNamed("spot");
  ASSERT_NE(p.availability, nullptr);
  EXPECT_DOUBLE_EQ(p.availability->flip[p.availability->State(false, 19)], 1);

  // A reclaim (not a release) still reads as it did: b noticed, down from the notice.
  Sql("UPDATE nodes SET notice_at = now() WHERE name = 'b'");
  p = PoolNamed("spot");
  EXPECT_FALSE(p.availability_now.up);
  EXPECT_FALSE(p.availability_now.assumed);
}

}  // namespace
}  // namespace frugal::store
