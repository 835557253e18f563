// The CycleStore port's contract (scheduler/store/cycle_store.h), one typed suite run on
// both implementations: PgStore on the test PostgreSQL and MemoryCycleStore
// (tests/testing/memory_cycle_store.h), so engine tests on the memory store test what the
// scheduler runs. Each backend sets up through its own means (the PostgreSQL one through
// the queue and worker ports, as a scheduler would) and the cases speak only the port.
#include <gtest/gtest.h>

#include <memory>

#include "common/crypto.h"
#include "scheduler/store/pg/pg_conn.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/memory_cycle_store.h"
#include "tests/testing/store_fixture.h"
#include "tests/testing/test_postgres.h"

namespace frugal::store {
namespace {

using namespace std::chrono_literals;

// What a case needs besides the port: rows to plan over, and ways to let leases lapse.
// One spot pool of 80 GB a100s; jobs of the bootstrap team in priority class "normal"
// unless said otherwise.
class PgBackend {
 public:
  void SetUp() {
    conninfo_ = testing::TestPostgres::Get().NewDatabase();
    store_ = std::make_unique<PgStore>(conninfo_, 2);
    ASSERT_TRUE(store_->Bootstrap(Sha256Hex("admin")).ok());
    auto admin = store_->Authenticate(Sha256Hex("admin"));
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = *admin;
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("a100-spot", model::CapacityKind::kSpot, 1'200'000))
            .ok());
  }
  CycleStore& store() { return *store_; }
  std::unique_ptr<CycleStore> Another() { return std::make_unique<PgStore>(conninfo_, 1); }
  model::NodeId AddNode(const std::string& name, int gpus) {
    auto r = store_->RegisterWorker(testing::A100Node(name, gpus), "a100-spot", Seconds(60),
                                    std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->node_id : 0;
  }
  model::JobId AddJob(int gpus, int nodes = 1, const std::string& priority = "normal") {
    SubmitRequest r;
    r.spec.command = {"true"};
    r.spec.gpus = gpus;
    r.spec.nodes = nodes;
    r.spec.priority = priority;
    auto res = store_->Submit(admin_, r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    return res.ok() ? res->job.id : 0;
  }
  void LoseNode(model::NodeId id) {
    Exec("UPDATE nodes SET lease_expires_at = now() - interval '1 second' WHERE id = " +
         std::to_string(id));
  }
  void ExpireLeaderLease() {
    Exec("UPDATE leader_lease SET expires_at = now() - interval '1 second'");
  }
  model::JobState StateOf(model::JobId id) {
    auto d = store_->GetJob(id, std::nullopt);
    return d.ok() ? d->job.state : model::JobState::kFailed;
  }

 private:
  void Exec(const std::string& sql) {
    auto c = PgConn::Connect(conninfo_);
    ASSERT_TRUE(c.ok());
    ASSERT_TRUE((*c)->ExecScript(sql).ok()) << sql;
  }
  std::string conninfo_;
  std::unique_ptr<PgStore> store_;
  Principal admin_;
};

class MemoryBackend {
 public:
  void SetUp() {
    pool_ =
        cluster_->AddPool(testing::A100Pool("a100-spot", model::CapacityKind::kSpot, 1'200'000));
    store_ = std::make_unique<testing::MemoryCycleStore>(cluster_, "scheduler-1");
  }
  CycleStore& store() { return *store_; }
  std::unique_ptr<CycleStore> Another() {
    return std::make_unique<testing::MemoryCycleStore>(
        cluster_, "scheduler-" + std::to_string(++others_ + 1));
  }
  model::NodeId AddNode(const std::string& name, int gpus) {
    model::Node n = testing::A100Node(name, gpus);
    n.pool_id = pool_;
    return cluster_->AddNode(n, Seconds(60));
  }
  model::JobId AddJob(int gpus, int nodes = 1, const std::string& priority = "normal") {
    model::PendingJob j;
    j.gpus = gpus;
    j.nodes = nodes;
    j.team_id = 1;
    j.priority_rank = priority == "critical" ? 0
                      : priority == "high"   ? 1
                      : priority == "low"    ? 3
                                             : 2;
    return cluster_->AddJob(j);
  }
  void LoseNode(model::NodeId id) {
    cluster_->ExpireNode(id);
    cluster_->clock().Advance(1s);
  }
  void ExpireLeaderLease() {
    cluster_->ExpireLeaderLease();
    cluster_->clock().Advance(1s);
  }
  model::JobState StateOf(model::JobId id) { return cluster_->StateOf(id); }

 private:
  std::shared_ptr<testing::MemoryCluster> cluster_ =
      std::make_shared<testing::MemoryCluster>(Timestamp(std::chrono::hours(24 * 365 * 56)));
  model::PoolId pool_ = 0;
  std::unique_ptr<testing::MemoryCycleStore> store_;
  int others_ = 0;
};

template <typename Backend>
class CycleStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(b_.SetUp());
    auto lead = b_.store().TryLeadership(std::chrono::hours(1));
    ASSERT_TRUE(lead.ok() && lead->leader) << lead.status().ToString();
    term_ = lead->term;
  }
  CycleStore& store() { return b_.store(); }
  model::Snapshot Snapshot() {
    auto s = store().LoadSnapshot({100, 100});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : model::Snapshot{};
  }
  static model::Plan Start(model::JobId job, model::NodeId node, int gpus) {
    model::Plan p;
    p.assignments.push_back({job, node, gpus, "placed", 0});
    return p;
  }
  Backend b_;
  std::int64_t term_ = 0;
};

using Backends = ::testing::Types<PgBackend, MemoryBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, PgBackend> ? "Postgres" : "Memory";
  }
};
TYPED_TEST_SUITE(CycleStoreContractTest, Backends, BackendNames);

TYPED_TEST(CycleStoreContractTest, OneLeaderAtATimeAndTheFenceRefusesTheOthers) {
  auto other = this->b_.Another();
  auto standby = other->TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(standby.ok()) << standby.status().ToString();
  EXPECT_FALSE(standby->leader);
  EXPECT_EQ(standby->term, this->term_);
  EXPECT_TRUE(IsNotLeader(other->ApplyPlan({}).status()));
  EXPECT_TRUE(IsNotLeader(other->SweepLostNodes().status()));
  auto renewed = this->store().TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(renewed.ok());
  EXPECT_TRUE(renewed->leader);
  EXPECT_FALSE(renewed->acquired);
  EXPECT_EQ(renewed->term, this->term_);
  // The lease lapses: the standby takes a new term, and the old leader's writes are refused.
  this->b_.ExpireLeaderLease();
  auto took = other->TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(took.ok());
  EXPECT_TRUE(took->leader);
  EXPECT_TRUE(took->acquired);
  EXPECT_EQ(took->term, this->term_ + 1);
  // Its sweep too, with no lease run out (decision 0048: it reads the term before it
  // decides there is nothing to sweep). First: a refused write forgets the term.
  EXPECT_TRUE(IsNotLeader(this->store().SweepLostNodes().status()));
  EXPECT_TRUE(IsNotLeader(this->store().ApplyPlan({}).status()));
  EXPECT_TRUE(other->ApplyPlan({}).ok());
  // A clean release hands over at once.
  ASSERT_TRUE(other->ReleaseLeadership().ok());
  auto back = this->store().TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(back.ok());
  EXPECT_TRUE(back->leader);
  EXPECT_EQ(back->term, this->term_ + 2);
}

// A deposed leader's plan writes nothing: in PostgreSQL the fence runs in the same
// pipeline as the writes (decision 0054), and what they wrote is rolled back with it.
TYPED_TEST(CycleStoreContractTest, ADeposedLeadersPlanWritesNothing) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto placed = this->b_.AddJob(1);
  const auto waiting = this->b_.AddJob(1);
  auto other = this->b_.Another();
  this->b_.ExpireLeaderLease();
  auto took = other->TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(took.ok()) << took.status().ToString();
  ASSERT_TRUE(took->leader);
  model::Plan plan = this->Start(placed, n1, 1);
  plan.waits.push_back({waiting, "waiting: for the deposed leader"});
  EXPECT_TRUE(IsNotLeader(this->store().ApplyPlan(plan).status()));
  model::Snapshot s = this->Snapshot();
  EXPECT_TRUE(s.running.empty());
  ASSERT_EQ(s.pending.size(), 2u);
  for (const auto& j : s.pending) EXPECT_NE(j.reason, "waiting: for the deposed leader");
  // The same plan from the leader starts the job and stores the reason.
  auto applied = other->ApplyPlan(plan);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->started, 1);
  s = this->Snapshot();
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_EQ(s.running[0].job_id, placed);
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].reason, "waiting: for the deposed leader");
}

TYPED_TEST(CycleStoreContractTest, TheSnapshotHasPendingJobsInClaimOrderAndOnlyLiveNodes) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto n2 = this->b_.AddNode("n2", 8);
  const auto low = this->b_.AddJob(1, 1, "low");
  const auto normal = this->b_.AddJob(1);
  const auto high = this->b_.AddJob(1, 1, "high");
  this->b_.LoseNode(n2);
  const model::Snapshot s = this->Snapshot();
  ASSERT_EQ(s.pending.size(), 3u);
  EXPECT_EQ(s.pending[0].id, high);
  EXPECT_EQ(s.pending[1].id, normal);
  EXPECT_EQ(s.pending[2].id, low);
  ASSERT_EQ(s.nodes.size(), 1u);
  EXPECT_EQ(s.nodes[0].id, n1);
  EXPECT_EQ(s.nodes[0].gpus, 8);
  ASSERT_EQ(s.pools.size(), 1u);
  EXPECT_EQ(s.pools[0].name, "a100-spot");
  EXPECT_TRUE(s.running.empty());
  EXPECT_NE(s.now, Timestamp{});
}

TYPED_TEST(CycleStoreContractTest, TheWindowTakesEachTeamsHeadAndAtMostMaxPending) {
  this->b_.AddNode("n1", 8);
  std::vector<model::JobId> jobs;
  for (int i = 0; i < 5; ++i) jobs.push_back(this->b_.AddJob(1));
  auto s = this->store().LoadSnapshot({3, 100});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->pending.size(), 3u);
  EXPECT_EQ(s->pending[0].id, jobs[0]);
  EXPECT_EQ(s->pending[2].id, jobs[2]);
  s = this->store().LoadSnapshot({100, 2});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->pending.size(), 2u);
}

TYPED_TEST(CycleStoreContractTest, AFocusJobBeyondTheWindowIsAddedInItsPlace) {
  this->b_.AddNode("n1", 8);
  std::vector<model::JobId> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(this->b_.AddJob(1));
  const auto high = this->b_.AddJob(1, 1, "high");
  // The window's two are `high` and jobs[0]; jobs[3] is beyond it, and comes last.
  auto s = this->store().LoadSnapshot({2, 100, jobs[3]});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->pending.size(), 3u);
  EXPECT_EQ(s->pending[0].id, high);
  EXPECT_EQ(s->pending[1].id, jobs[0]);
  EXPECT_EQ(s->pending[2].id, jobs[3]);
  // A focus the window reaches is not read twice.
  s = this->store().LoadSnapshot({2, 100, jobs[0]});
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->pending.size(), 2u);
}

TYPED_TEST(CycleStoreContractTest, AnAssignmentStartsOnceAndTheSnapshotShowsIt) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto job = this->b_.AddJob(4);
  const model::Plan plan = this->Start(job, n1, 4);
  auto first = this->store().ApplyPlan(plan);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->started, 1);
  auto again = this->store().ApplyPlan(plan);  // a stale plan: the job is no longer pending
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->started, 0);
  EXPECT_EQ(this->b_.StateOf(job), model::JobState::kRunning);
  const model::Snapshot s = this->Snapshot();
  EXPECT_TRUE(s.pending.empty());
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_EQ(s.running[0].job_id, job);
  EXPECT_EQ(s.running[0].node_id, n1);
  EXPECT_EQ(s.running[0].gpus, 4);
  EXPECT_FALSE(s.running[0].stopping);
}

TYPED_TEST(CycleStoreContractTest, NothingStartsOnALostNodeAndAGangStartsWholeOrNotAtAll) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto n2 = this->b_.AddNode("n2", 8);
  const auto single = this->b_.AddJob(2);
  const auto gang = this->b_.AddJob(16, 2);
  this->b_.LoseNode(n2);
  model::Plan plan = this->Start(single, n2, 2);
  plan.assignments.push_back({gang, n1, 8, "gang", 0});
  plan.assignments.push_back({gang, n2, 8, "gang", 0});
  auto applied = this->store().ApplyPlan(plan);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->started, 0);
  EXPECT_EQ(this->b_.StateOf(single), model::JobState::kPending);
  EXPECT_EQ(this->b_.StateOf(gang), model::JobState::kPending);
  EXPECT_TRUE(this->Snapshot().running.empty()) << "no part of the gang started";
}

TYPED_TEST(CycleStoreContractTest, WaitsAndHoldsChangeOnlyPendingJobs) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto waiting = this->b_.AddJob(1);
  const auto held = this->b_.AddJob(1);
  const auto running = this->b_.AddJob(1);
  ASSERT_EQ(this->store().ApplyPlan(this->Start(running, n1, 1))->started, 1);
  model::Plan plan;
  plan.waits = {{waiting, "waiting: for a test"}, {running, "waiting: never shown"}};
  plan.holds = {{held, "held: a dependency failed"}};
  ASSERT_TRUE(this->store().ApplyPlan(plan).ok());
  const model::Snapshot s = this->Snapshot();
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].id, waiting);
  EXPECT_EQ(s.pending[0].reason, "waiting: for a test");
  EXPECT_EQ(this->b_.StateOf(held), model::JobState::kHeld);
  EXPECT_EQ(this->b_.StateOf(running), model::JobState::kRunning);
}

TYPED_TEST(CycleStoreContractTest, AStopOrderMarksTheAttemptStoppingOnce) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto job = this->b_.AddJob(2);
  ASSERT_EQ(this->store().ApplyPlan(this->Start(job, n1, 2))->started, 1);
  const auto attempt = this->Snapshot().running.at(0).attempt_id;
  model::Plan plan;
  plan.stops.push_back({attempt, job, model::StopKind::kPriorityPreemption, "preempted: test"});
  ASSERT_TRUE(this->store().ApplyPlan(plan).ok());
  model::Snapshot s = this->Snapshot();
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_TRUE(s.running[0].stopping);
  // An idle stop for the same attempt finds a stop order already there: it writes none.
  model::Plan idle;
  idle.idle_actions.push_back({attempt, job, true, model::IdleStep::kStop, "idle: test"});
  auto applied = this->store().ApplyPlan(idle);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  EXPECT_EQ(applied->idle_stops, 0);
  s = this->Snapshot();
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_TRUE(s.running[0].idle_warned) << "the warning is written even so";
}

TYPED_TEST(CycleStoreContractTest, AnIdleStopIsWrittenOnce) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto job = this->b_.AddJob(2);
  ASSERT_EQ(this->store().ApplyPlan(this->Start(job, n1, 2))->started, 1);
  const auto attempt = this->Snapshot().running.at(0).attempt_id;
  model::Plan idle;
  idle.idle_actions.push_back({attempt, job, true, model::IdleStep::kRequeue, "idle: test"});
  EXPECT_EQ(this->store().ApplyPlan(idle)->idle_stops, 1);
  EXPECT_EQ(this->store().ApplyPlan(idle)->idle_stops, 0);
  const model::Snapshot s = this->Snapshot();
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_TRUE(s.running[0].stopping);
  EXPECT_TRUE(s.running[0].idle_warned);
}

TYPED_TEST(CycleStoreContractTest, TheSweepEndsALostNodesAttemptsAndRequeuesTheirJobs) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto n2 = this->b_.AddNode("n2", 8);
  const auto lost_job = this->b_.AddJob(2);
  const auto safe_job = this->b_.AddJob(2);
  model::Plan plan = this->Start(lost_job, n1, 2);
  plan.assignments.push_back({safe_job, n2, 2, "placed", 0});
  ASSERT_EQ(this->store().ApplyPlan(plan)->started, 2);
  auto nothing = this->store().SweepLostNodes();
  ASSERT_TRUE(nothing.ok()) << nothing.status().ToString();
  EXPECT_TRUE(nothing->empty());
  this->b_.LoseNode(n1);
  auto swept = this->store().SweepLostNodes();
  ASSERT_TRUE(swept.ok()) << swept.status().ToString();
  ASSERT_EQ(swept->size(), 1u);
  EXPECT_EQ((*swept)[0].name, "n1");
  ASSERT_EQ((*swept)[0].jobs.size(), 1u);
  EXPECT_EQ((*swept)[0].jobs[0], lost_job);
  EXPECT_EQ((*swept)[0].attempts.size(), 1u);
  EXPECT_EQ(this->b_.StateOf(lost_job), model::JobState::kPending);
  EXPECT_EQ(this->b_.StateOf(safe_job), model::JobState::kRunning);
  const model::Snapshot s = this->Snapshot();
  ASSERT_EQ(s.pending.size(), 1u);
  EXPECT_EQ(s.pending[0].id, lost_job);
  ASSERT_EQ(s.running.size(), 1u);
  EXPECT_EQ(s.running[0].job_id, safe_job);
  EXPECT_TRUE(this->store().SweepLostNodes()->empty()) << "a node is declared lost once";
}

// A cycle's reads in one call (decision 0057): the sweep first, so a lost node's job is
// pending in the snapshot that comes back; with nothing to sweep, the snapshot as
// LoadSnapshot takes it; and a deposed leader is refused as the sweep refuses it.
TYPED_TEST(CycleStoreContractTest, ACyclesReadSweepsFirstThenTakesTheSnapshot) {
  const auto n1 = this->b_.AddNode("n1", 8);
  const auto n2 = this->b_.AddNode("n2", 8);
  const auto lost_job = this->b_.AddJob(2);
  const auto safe_job = this->b_.AddJob(2);
  const auto waiting = this->b_.AddJob(1);
  model::Plan plan = this->Start(lost_job, n1, 2);
  plan.assignments.push_back({safe_job, n2, 2, "placed", 0});
  ASSERT_EQ(this->store().ApplyPlan(plan)->started, 2);
  auto calm = this->store().SweepAndLoadSnapshot({100, 100});
  ASSERT_TRUE(calm.ok()) << calm.status().ToString();
  EXPECT_TRUE(calm->lost.empty());
  ASSERT_EQ(calm->snapshot.pending.size(), 1u);
  EXPECT_EQ(calm->snapshot.pending[0].id, waiting);
  EXPECT_EQ(calm->snapshot.running.size(), 2u);
  this->b_.LoseNode(n1);
  auto read = this->store().SweepAndLoadSnapshot({100, 100});
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  ASSERT_EQ(read->lost.size(), 1u);
  EXPECT_EQ(read->lost[0].name, "n1");
  ASSERT_EQ(read->lost[0].jobs.size(), 1u);
  EXPECT_EQ(read->lost[0].jobs[0], lost_job);
  std::vector<model::JobId> pending;
  for (const auto& j : read->snapshot.pending) pending.push_back(j.id);
  EXPECT_EQ(pending, (std::vector<model::JobId>{lost_job, waiting}));
  ASSERT_EQ(read->snapshot.running.size(), 1u);
  EXPECT_EQ(read->snapshot.running[0].job_id, safe_job);
  for (const auto& n : read->snapshot.nodes) EXPECT_NE(n.name, "n1") << "a lost node is not live";
  auto again = this->store().SweepAndLoadSnapshot({100, 100});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->lost.empty()) << "a node is declared lost once";
  // Deposed: the sweep's fence refuses, whether or not a lease ran out.
  auto other = this->b_.Another();
  this->b_.ExpireLeaderLease();
  ASSERT_TRUE(other->TryLeadership(std::chrono::hours(1))->leader);
  this->b_.LoseNode(n2);
  EXPECT_TRUE(IsNotLeader(this->store().SweepAndLoadSnapshot({100, 100}).status()));
  EXPECT_EQ(this->b_.StateOf(safe_job), model::JobState::kRunning)
      << "a deposed leader swept a node";
}

}  // namespace
}  // namespace frugal::store
