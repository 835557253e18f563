// What placement/cost needs from the store, against a real PostgreSQL: the richer snapshot
// (estimates, checkpoint progress, running attempts' facts, idle nodes, fair-share usage),
// learned spot preemption rates, scheduler stops, and assignments that skip draining nodes.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "common/crypto.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::store {
namespace {

class CostStoreTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    model::Pool pool = testing::A100Pool("spot", model::CapacityKind::kSpot, 900'000);
    pool.startup_delay = Seconds(90);
    pool.idle_timeout = Seconds(600);
    pool.preemption_prior_per_node_hour = 0.5;
    ASSERT_TRUE(store_->UpsertPool(pool).ok());
  }

  Registration Register(const std::string& name) {
    auto r = store_->RegisterWorker(testing::A100Node(name, 4), "spot", Seconds(60), std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return *r;
  }

  model::JobId Submit(const Principal* who = nullptr) {
    SubmitRequest r;
    r.spec.command = {"train"};
    r.spec.estimate = Seconds(7200);
    r.spec.checkpoint_interval = Seconds(600);
    r.spec.tolerance = model::Tolerance::kCheckpointed;
    r.spec.gpu_types = {"a100"};
    return store_->Submit(who ? *who : admin_, r)->job.id;
  }

  // SQL the store has no reason to offer: moving time for a test.
  void Sql(const std::string& sql) {
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->ExecScript(sql).ok()) << sql;
  }

  // Fair share's definition: the decayed GPU-hours of the attempts `from_where` selects
  // (as `a`), summed in one query, as each snapshot summed them before the cache.
  double DefinedHours(const std::string& from_where) {
    auto c = PgConn::Connect(conninfo_);
    EXPECT_TRUE(c.ok());
    auto r = (*c)->Exec("defined_hours",
                        "SELECT coalesce(sum(a.gpus * extract(epoch from (coalesce(a.ended_at,"
                        " now()) - a.started_at)) / 3600.0 * power(0.5, extract(epoch from"
                        " (now() - coalesce(a.ended_at, now()))) / 604800.0)), 0) " +
                            from_where,
                        {});
    EXPECT_TRUE(r.ok());
    return r.ok() ? r->Double(0, 0) : -1.0;
  }

  model::Snapshot Snap() {
    auto s = store_->LoadSnapshot({100, 100});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : model::Snapshot{};
  }

  void Start() {
    auto plan = policy::FifoPolicy().Decide(Snap());
    ASSERT_TRUE(store_->ApplyPlan(plan).ok());
  }
};

TEST_F(CostStoreTest, PoolEconomicsRoundTrip) {
  auto pools = store_->ListPools();
  ASSERT_TRUE(pools.ok());
  ASSERT_EQ(pools->size(), 1u);
  const auto& p = (*pools)[0];
  EXPECT_EQ(p.startup_delay.count(), 90);
  EXPECT_EQ(p.idle_timeout.count(), 600);
  EXPECT_DOUBLE_EQ(p.preemption_prior_per_node_hour, 0.5);
  // Nothing observed yet: the learned rate is the prior.
  EXPECT_DOUBLE_EQ(p.preemption_rate_per_node_hour, 0.5);
}

TEST_F(CostStoreTest, NoticesTeachThePoolItsPreemptionRate) {
  auto a = Register("a"), b = Register("b");
  // Two nodes observed for 5 h each, one of them reclaimed: 1 notice in 10 node-hours.
  Sql("UPDATE nodes SET registered_at = now() - interval '5 hours', last_heartbeat_at = now()");
  HeartbeatRequest hb;
  hb.node = "a";
  hb.lease_epoch = a.lease_epoch;
  hb.node_id = NodeIdOf(hb.node);
  hb.notice = true;
  ASSERT_TRUE(store_->Heartbeat(hb, Seconds(60)).ok());
  hb.node = "b";
  hb.lease_epoch = b.lease_epoch;
  hb.node_id = NodeIdOf(hb.node);
  hb.notice = false;
  hb.draining = true;  // shutting down is not a reclaim
  ASSERT_TRUE(store_->Heartbeat(hb, Seconds(60)).ok());
  // (prior 0.5 x 10 prior node-hours + 1 notice) / (10 + 10 node-hours) = 0.3.
  EXPECT_NEAR((*store_->ListPools())[0].preemption_rate_per_node_hour, 0.3, 1e-3);
  // Both nodes are draining: the policy sees neither.
  EXPECT_TRUE(Snap().nodes.empty());
}

TEST_F(CostStoreTest, GapsBetweenNodeLivesTeachThePoolItsMeanOutage) {
  ASSERT_TRUE(store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, 3'000'000)).ok());
  // Nothing observed yet: the prior of one outage of kOutagePriorHours.
  auto pools = store_->ListPools();
  ASSERT_TRUE(pools.ok());
  EXPECT_DOUBLE_EQ((*pools)[0].mean_outage_hours, model::kOutagePriorHours);
  EXPECT_DOUBLE_EQ((*pools)[1].mean_outage_hours, 0);  // not spot: never waited for
  Register("a");
  Register("b");
  Register("c");
  // a lived 10h-8h ago and b 9h-7h ago (overlapping: no outage); c registered 4h ago,
  // after 3 hours with no node.
  Sql("UPDATE nodes SET registered_at = now() - interval '10 hours',"
      " last_heartbeat_at = now() - interval '8 hours' WHERE name = 'a';"
      "UPDATE nodes SET registered_at = now() - interval '9 hours',"
      " last_heartbeat_at = now() - interval '7 hours' WHERE name = 'b';"
      "UPDATE nodes SET registered_at = now() - interval '4 hours',"
      " last_heartbeat_at = now() WHERE name = 'c'");
  // One 3-hour outage with the prior's hour: (1 + 3) / (1 + 1) = 2 hours.
  EXPECT_NEAR((*store_->ListPools())[0].mean_outage_hours, 2.0, 1e-6);
  // The snapshot the policy decides on carries it.
  EXPECT_NEAR(Snap().pools[0].mean_outage_hours, 2.0, 1e-6);
}

// Fair share from a cached total plus what ended since (decision 0028) equals the sum over
// every attempt of the last 56 days, when the total is taken and from the cache after.
TEST_F(CostStoreTest, FairShareFromTheCachedTotalMatchesTheFullSum) {
  Register("n1");
  for (int i = 0; i < 3; ++i) Submit();
  Start();
  Sql("UPDATE attempts SET started_at = now() - interval '3 days 2 hours',"
      " ended_at = now() - interval '3 days', end_reason = 'succeeded'"
      " WHERE id = (SELECT min(id) FROM attempts)");
  Sql("UPDATE attempts SET started_at = now() - interval '10 days 5 hours',"
      " ended_at = now() - interval '10 days', end_reason = 'failed'"
      " WHERE id = (SELECT min(id) + 1 FROM attempts)");
  Sql("UPDATE attempts SET started_at = now() - interval '1 hour' WHERE ended_at IS NULL");
  // The definition, over every attempt (what each snapshot summed before the cache).
  auto full = [&] {
    return DefinedHours(
        "FROM attempts a WHERE a.ended_at IS NULL OR a.ended_at > now() - interval '56 days'");
  };
  // A scheduler that starts now takes its cached total from these attempts. (store_ took
  // its own when Start() read a snapshot, before the attempts were moved into the past,
  // which a real attempt's end never is.)
  PgStore fresh(conninfo_, 2);
  auto snap = [&] {
    auto s = fresh.LoadSnapshot({100, 100});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? s->team_usage[admin_.team_id].gpu_hours : -1.0;
  };
  const double first = snap();
  EXPECT_NEAR(first, full(), 1e-3);
  EXPECT_GT(first, 1.0);  // 2 h x 0.74 + 5 h x 0.37 + 1 h running
  // The running attempt ends now, after the cached total was taken: the next snapshot adds
  // it from the recent read, and still matches.
  Sql("UPDATE attempts SET ended_at = now(), end_reason = 'succeeded' WHERE ended_at IS NULL");
  Sql("UPDATE attempts SET started_at = now() - interval '4 hours'"
      " WHERE id = (SELECT max(id) FROM attempts)");
  const double second = snap();
  EXPECT_NEAR(second, full(), 1e-3);
  EXPECT_GT(second, first + 2.5);  // the last attempt now counts 4 h, not 1 h
  // A second on, a snapshot folds what ended more than three seconds ago into the cached
  // total (decision 0035) and reads only the rest: the sum is still the definition's, and
  // the folded attempt is counted once, by this snapshot and the next.
  Sql("UPDATE attempts SET ended_at = now() - interval '30 seconds', started_at = now() -"
      " interval '4 hours 30 seconds' WHERE id = (SELECT max(id) FROM attempts)");
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  EXPECT_NEAR(snap(), full(), 1e-3);
  EXPECT_NEAR(snap(), full(), 1e-3);
}

// Each attempt counts to its own job's team (decision 0051): two teams' attempts of
// different lengths, ended and running, give each team its own sum, as the definition
// (attempts joined to their jobs) gives it.
TEST_F(CostStoreTest, FairShareCountsEachAttemptToItsJobsTeam) {
  ASSERT_TRUE(store_->CreateTeam("vision").ok());
  auto issued = store_->CreateToken("vision", "vic", Role::kResearcher, Sha256Hex("tok-vic"));
  ASSERT_TRUE(issued.ok()) << issued.status().ToString();
  auto vic = store_->Authenticate(Sha256Hex("tok-vic"));
  ASSERT_TRUE(vic.ok());
  ASSERT_NE(vic->team_id, admin_.team_id);
  Register("n1");
  Register("n2");
  const model::JobId ours = Submit();
  const model::JobId theirs = Submit(&*vic);
  Submit(&*vic);
  Start();
  Sql("UPDATE attempts SET started_at = now() - interval '2 hours', ended_at = now() -"
      " interval '1 hour', end_reason = 'succeeded' WHERE job_id = " + std::to_string(ours));
  Sql("UPDATE attempts SET started_at = now() - interval '5 hours' WHERE job_id = " +
      std::to_string(theirs));
  auto by_join = [&](model::TeamId team) {
    return DefinedHours("FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE j.team_id = " +
                        std::to_string(team));
  };
  // A scheduler that starts now sums every attempt (the refresh) and reads the running.
  PgStore fresh(conninfo_, 2);
  auto s = fresh.LoadSnapshot({100, 100});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->running.size(), 2u);  // vision's two jobs
  EXPECT_NEAR(s->team_usage[admin_.team_id].gpu_hours, by_join(admin_.team_id), 1e-3);
  EXPECT_NEAR(s->team_usage[vic->team_id].gpu_hours, by_join(vic->team_id), 1e-3);
  EXPECT_GT(s->team_usage[vic->team_id].gpu_hours, 5.0);   // 5 h and a moment, running
  EXPECT_LT(s->team_usage[admin_.team_id].gpu_hours, 1.1);  // 1 h, decayed an hour
}

TEST_F(CostStoreTest, SnapshotCarriesWhatTheCostPolicyWeighs) {
  auto reg = Register("n1");
  model::JobId job = Submit();
  auto pending = Snap();
  ASSERT_EQ(pending.pending.size(), 1u);
  EXPECT_EQ(pending.pending[0].estimate, Seconds(7200));
  EXPECT_EQ(pending.pending[0].checkpoint_interval, Seconds(600));
  EXPECT_DOUBLE_EQ(pending.pending[0].progress, 0);
  ASSERT_EQ(pending.nodes.size(), 1u);
  EXPECT_TRUE(pending.nodes[0].idle_since.has_value());  // no attempt yet: idle since joining

  Start();
  auto snap = Snap();
  ASSERT_EQ(snap.running.size(), 1u);
  const auto& r = snap.running[0];
  EXPECT_EQ(r.job_id, job);
  EXPECT_EQ(r.pool_id, snap.pools[0].id);
  EXPECT_EQ(r.tolerance, model::Tolerance::kCheckpointed);
  EXPECT_EQ(r.estimate, Seconds(7200));
  EXPECT_EQ(r.gpu_types, std::vector<std::string>{"a100"});
  EXPECT_FALSE(r.last_checkpoint_at.has_value());
  EXPECT_FALSE(r.stopping);
  EXPECT_FALSE(snap.nodes[0].idle_since.has_value());  // busy
  EXPECT_EQ(snap.team_usage.count(admin_.team_id), 1u);

  CheckpointReport ck;
  ck.attempt_id = r.attempt_id;
  ck.lease_epoch = reg.lease_epoch;
  ck.step = 40;
  ck.progress = 0.4;
  ck.uri = "file:///ck/40";
  ASSERT_TRUE(store_->CommitCheckpoint(ck, AuthOf(ck.attempt_id)).ok());
  auto after = Snap();
  EXPECT_DOUBLE_EQ(after.running[0].progress, 0.4);
  EXPECT_TRUE(after.running[0].last_checkpoint_at.has_value());
}

TEST_F(CostStoreTest, StopsOrderTheWorkerAndRememberPriorityPreemption) {
  auto reg = Register("n1");
  model::JobId job = Submit();
  Start();
  auto snap = Snap();
  ASSERT_EQ(snap.running.size(), 1u);
  model::Plan plan;
  plan.stops.push_back({snap.running[0].attempt_id, job, model::StopKind::kPriorityPreemption,
                        "preempted for job 9 (critical): least work lost"});
  ASSERT_TRUE(store_->ApplyPlan(plan).ok());
  ASSERT_TRUE(store_->ApplyPlan(plan).ok());  // a repeated order changes nothing
  // The worker hears it on its next heartbeat.
  HeartbeatRequest hb;
  hb.node = "n1";
  hb.lease_epoch = reg.lease_epoch;
  hb.node_id = NodeIdOf(hb.node);
  hb.running = {snap.running[0].attempt_id};
  auto reply = store_->Heartbeat(hb, Seconds(60));
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->stops.size(), 1u);
  EXPECT_EQ(reply->stops[0].reason, protocol::StopReason::kPreempted);
  auto again = Snap();
  EXPECT_TRUE(again.running[0].stopping);
  EXPECT_TRUE(again.running[0].last_priority_preemption_at.has_value());
  auto detail = store_->GetJob(job, std::nullopt);
  ASSERT_TRUE(detail.ok());
  int ordered = 0;
  for (const auto& e : detail->events) ordered += e.kind == "stop_ordered";
  EXPECT_EQ(ordered, 1);
}

// A move back to spot (decision 0014) is carried out like the other stops: the worker is
// told to checkpoint and stop, the attempt ends preempted with its kind recorded, and the
// job is pending again, without counting as a priority preemption.
TEST_F(CostStoreTest, MigrateToSpotStopRequeuesTheJob) {
  auto reg = Register("n1");
  model::JobId job = Submit();
  Start();
  auto snap = Snap();
  ASSERT_EQ(snap.running.size(), 1u);
  model::AttemptId attempt = snap.running[0].attempt_id;
  model::Plan plan;
  plan.stops.push_back({attempt, job, model::StopKind::kMigrateToSpot,
                        "moving to spot s (has room again): expected to save $10.00"});
  ASSERT_TRUE(store_->ApplyPlan(plan).ok());
  HeartbeatRequest hb;
  hb.node = "n1";
  hb.lease_epoch = reg.lease_epoch;
  hb.node_id = NodeIdOf(hb.node);
  hb.running = {attempt};
  auto reply = store_->Heartbeat(hb, Seconds(60));
  ASSERT_TRUE(reply.ok());
  ASSERT_EQ(reply->stops.size(), 1u);
  EXPECT_EQ(reply->stops[0].reason, protocol::StopReason::kPreempted);
  auto stopping = Snap();
  ASSERT_EQ(stopping.running.size(), 1u);
  EXPECT_TRUE(stopping.running[0].stopping);
  EXPECT_FALSE(stopping.running[0].last_priority_preemption_at.has_value());
  auto finished = store_->FinishAttempt(attempt, reg.lease_epoch, Outcome::kPreempted, 143, AuthOf(attempt));
  ASSERT_TRUE(finished.ok()) << finished.status().ToString();
  EXPECT_EQ(finished->state, model::JobState::kPending);
  auto detail = store_->GetJob(job, std::nullopt);
  ASSERT_TRUE(detail.ok());
  bool ordered = false;
  for (const auto& e : detail->events)
    ordered = ordered || (e.kind == "stop_ordered" && e.message.rfind("migrate_to_spot: ", 0) == 0);
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(Snap().running.empty());
}

TEST_F(CostStoreTest, AssignmentToANodeThatGotANoticeIsNotApplied) {
  auto reg = Register("n1");
  model::JobId job = Submit();
  auto snap = Snap();
  auto plan = policy::FifoPolicy().Decide(snap);
  ASSERT_EQ(plan.assignments.size(), 1u);
  // Between snapshot and apply the node reports a spot notice.
  HeartbeatRequest hb;
  hb.node = "n1";
  hb.lease_epoch = reg.lease_epoch;
  hb.node_id = NodeIdOf(hb.node);
  hb.notice = true;
  ASSERT_TRUE(store_->Heartbeat(hb, Seconds(60)).ok());
  auto started = store_->ApplyPlan(plan);
  ASSERT_TRUE(started.ok()) << started.status().ToString();
  EXPECT_EQ(started->started, 0);
  auto detail = store_->GetJob(job, std::nullopt);
  EXPECT_EQ(detail->job.state, model::JobState::kPending);
  EXPECT_TRUE(detail->attempts.empty());
}

}  // namespace
}  // namespace frugal::store
