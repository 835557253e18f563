// The engine on the in-memory CycleStore (tests/testing/memory_cycle_store.h, held to the
// same contract as PgStore by cycle_store_contract_test.cc): the cycle's contracts without
// PostgreSQL, with the cluster's FakeClock for leases.
#include <gtest/gtest.h>

#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "scheduler/engine/engine.h"
#include "scheduler/policy/placement/fifo_policy.h"
#include "tests/testing/memory_cycle_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::engine {
namespace {

using namespace std::chrono_literals;
using testing::MemoryCluster;
using testing::MemoryCycleStore;

// Forwards to a MemoryCycleStore and records each snapshot's window; while closed, the next
// LoadSnapshot waits in it (a cycle in progress) until Open().
class GatedStore final : public store::CycleStore {
 public:
  explicit GatedStore(store::CycleStore& inner) : inner_(inner) {}
  StatusOr<std::vector<store::LostNode>> SweepLostNodes() override {
    return inner_.SweepLostNodes();
  }
  StatusOr<store::LeaderStatus> TryLeadership(std::chrono::milliseconds ttl) override {
    return inner_.TryLeadership(ttl);
  }
  Status ReleaseLeadership() override { return inner_.ReleaseLeadership(); }
  StatusOr<model::Snapshot> LoadSnapshot(const store::PendingWindow& window) override {
    std::unique_lock<std::mutex> lock(mu_);
    windows_.push_back(window);
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });
    lock.unlock();
    return inner_.LoadSnapshot(window);
  }
  StatusOr<store::AppliedPlan> ApplyPlan(const model::Plan& plan) override {
    return inner_.ApplyPlan(plan);
  }

  void Close() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until `n` snapshots have been asked for; false after 10 s.
  bool WaitForSnapshots(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return windows_.size() >= n; });
  }
  std::vector<store::PendingWindow> windows() {
    std::lock_guard<std::mutex> lock(mu_);
    return windows_;
  }

 private:
  store::CycleStore& inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;                           // guarded by mu_
  std::vector<store::PendingWindow> windows_;  // guarded by mu_
};

class EngineMemoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    pool_ = cluster_->AddPool(testing::A100Pool("a100", model::CapacityKind::kOnDemand, 3'000'000));
  }
  model::NodeId AddNode(const std::string& name, int gpus) {
    model::Node n = testing::A100Node(name, gpus);
    n.pool_id = pool_;
    return cluster_->AddNode(n, Seconds(3600));
  }
  model::JobId AddJob(int gpus) {
    model::PendingJob j;
    j.gpus = gpus;
    j.team_id = 1;
    return cluster_->AddJob(j);
  }

  std::shared_ptr<MemoryCluster> cluster_ =
      std::make_shared<MemoryCluster>(Timestamp(std::chrono::hours(24 * 365 * 56)));
  model::PoolId pool_ = 0;
  policy::FifoPolicy fifo_;
};

// The engine's header promises: any number of kicks during a cycle cause exactly one more
// cycle, and that one reads the kicked window (decision 0036).
TEST_F(EngineMemoryTest, KicksDuringACycleCauseExactlyOneMoreCycle) {
  MemoryCycleStore memory(cluster_, "scheduler-1");
  GatedStore store(memory);
  EngineOptions options;
  options.interval = Seconds(3600);  // no timer cycle during the test
  Engine engine(store, fifo_, options);
  store.Close();
  // Declared after the engine, so destroyed first: a failed assertion below never leaves
  // the engine's Stop() waiting behind a closed gate.
  struct OpenOnExit {
    GatedStore& s;
    ~OpenOnExit() { s.Open(); }
  } open_on_exit{store};
  engine.Start();  // the first cycle runs at once, and waits in its snapshot
  ASSERT_TRUE(store.WaitForSnapshots(1));
  for (int i = 0; i < 20; ++i) engine.Kick();
  store.Open();
  ASSERT_TRUE(store.WaitForSnapshots(2));
  engine.Stop();  // runs what was posted before it, then joins
  const auto windows = store.windows();
  ASSERT_EQ(windows.size(), 2u) << "20 kicks during one cycle: one more cycle";
  EXPECT_EQ(windows[0].max_pending, options.pending.max_pending);  // the timer's: full
  EXPECT_EQ(windows[1].max_pending, 1000);                         // a kicked one
  EXPECT_EQ(windows[1].per_team, 100);
  EXPECT_EQ(engine.Stats().cycles, 2);
}

// Decision 0047: a kick for new work (a submit) waits until kick_spacing after the last
// cycle, so a burst of submits shares cycles; a kick for capacity runs at once, and takes
// the waiting one with it.
TEST_F(EngineMemoryTest, AKickForNewWorkWaitsTheSpacingAndAnyOtherKickDoesNot) {
  MemoryCycleStore memory(cluster_, "scheduler-1");
  GatedStore store(memory);
  EngineOptions options;
  options.interval = Seconds(3600);  // no timer cycle during the test
  options.kick_spacing = std::chrono::hours(1);
  Engine engine(store, fifo_, options);
  engine.Start();  // the first cycle runs at once
  ASSERT_TRUE(store.WaitForSnapshots(1));
  for (int i = 0; i < 20; ++i) engine.KickForNewWork();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(store.windows().size(), 1u) << "a submit's kick ran before the spacing was up";
  engine.Kick();
  ASSERT_TRUE(store.WaitForSnapshots(2));
  engine.Stop();
  EXPECT_EQ(store.windows().size(), 2u) << "one cycle for the capacity kick and the 20 others";
  EXPECT_EQ(engine.Stats().cycles, 2);
}

TEST_F(EngineMemoryTest, ACyclePlacesWhatFitsAndWakesTheNodesItAssignedTo) {
  const auto n1 = AddNode("n1", 8);
  const auto a = AddJob(4), b = AddJob(4), c = AddJob(4);
  MemoryCycleStore store(cluster_, "scheduler-1");
  Engine engine(store, fifo_, EngineOptions{});
  const std::int64_t seen = engine.WaitForWork(n1, -1, 0ms);
  ASSERT_TRUE(engine.RunCycleForTest().ok());
  EXPECT_EQ(cluster_->StateOf(a), model::JobState::kRunning);
  EXPECT_EQ(cluster_->StateOf(b), model::JobState::kRunning);
  EXPECT_EQ(cluster_->StateOf(c), model::JobState::kPending);
  EXPECT_EQ(cluster_->ReasonOf(c), "waiting: all 1 fitting node(s) are busy");
  EXPECT_EQ(engine.Stats().jobs_started, 2);
  EXPECT_NE(engine.WaitForWork(n1, seen, 0ms), seen) << "the node's generation moved";
}

TEST_F(EngineMemoryTest, AStandbyLeadsOnceTheLeadersLeaseLapsesAndTheOldLeaderStops) {
  AddNode("n1", 8);
  MemoryCycleStore a_store(cluster_, "a");
  MemoryCycleStore b_store(cluster_, "b");
  EngineOptions options;
  options.leader_lease_ttl = 6000ms;
  Engine a(a_store, fifo_, options);
  Engine b(b_store, fifo_, options);
  ASSERT_TRUE(a.RunCycleForTest().ok());
  ASSERT_TRUE(b.RunCycleForTest().ok());
  EXPECT_TRUE(a.Stats().leader);
  EXPECT_FALSE(b.Stats().leader);
  EXPECT_EQ(b.Stats().cycles, 0) << "a standby runs no cycle";
  // a falls silent; within the lease b still waits, after it b leads a new term.
  cluster_->clock().Advance(5s);
  ASSERT_TRUE(b.RunCycleForTest().ok());
  EXPECT_FALSE(b.Stats().leader);
  cluster_->clock().Advance(2s);
  ASSERT_TRUE(b.RunCycleForTest().ok());
  EXPECT_TRUE(b.Stats().leader);
  EXPECT_EQ(b.Stats().term, a.Stats().term + 1);
  // a wakes up: its renewal finds the term ended, and its cycle writes nothing.
  const auto job = AddJob(1);
  ASSERT_TRUE(a.RunCycleForTest().ok());
  EXPECT_FALSE(a.Stats().leader);
  EXPECT_EQ(cluster_->StateOf(job), model::JobState::kPending);
  ASSERT_TRUE(b.RunCycleForTest().ok());
  EXPECT_EQ(cluster_->StateOf(job), model::JobState::kRunning);
}

TEST_F(EngineMemoryTest, ALostNodesJobIsPlacedAgainInTheSameCycle) {
  const auto n1 = AddNode("n1", 8);
  const auto job = AddJob(8);
  MemoryCycleStore store(cluster_, "scheduler-1");
  Engine engine(store, fifo_, EngineOptions{});
  ASSERT_TRUE(engine.RunCycleForTest().ok());
  ASSERT_EQ(cluster_->StateOf(job), model::JobState::kRunning);
  const auto n2 = AddNode("n2", 8);
  cluster_->ExpireNode(n1);
  cluster_->clock().Advance(1s);
  ASSERT_TRUE(engine.RunCycleForTest().ok());
  EXPECT_EQ(cluster_->StateOf(job), model::JobState::kRunning);
  auto snap = store.LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok());
  ASSERT_EQ(snap->running.size(), 1u);
  EXPECT_EQ(snap->running[0].node_id, n2) << "swept first, so placed on n2 in that cycle";
}

}  // namespace
}  // namespace frugal::engine
