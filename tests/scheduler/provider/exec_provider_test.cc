// The exec provider's reconciling against an in-memory InstanceStore and a scripted cloud
// (a CommandFn): what it creates, destroys, backs off from and records, cycle by cycle.
// The real commands and database are in tests/worker/exec_provider_e2e_test.cc.
#include "scheduler/provider/exec_provider.h"

#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <thread>

#include "common/crypto.h"
#include "tests/testing/memory_instance_store.h"

namespace frugal::provider {
namespace {

using store::InstanceState;
using Clock = std::chrono::steady_clock;

// A cloud behind the command contract: instances by id, each with its node name.
class ScriptedCloud {
 public:
  CommandResult operator()(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                           const std::string&, std::chrono::milliseconds) {
    std::lock_guard<std::mutex> lock(mu_);
    CommandResult r;
    r.exit_code = 0;
    const std::string& verb = argv.at(1);
    if (verb == "create") {
      ++creates;
      for (const auto& e : env)
        if (e.rfind("FRUGAL_JOIN_TOKEN=", 0) == 0) token = e.substr(18);
      for (const auto& a : argv) EXPECT_EQ(a.find("frg_"), std::string::npos);  // env only
      if (stockout) {
        r.exit_code = 75;
        r.err_tail = "InsufficientInstanceCapacity";
        return r;
      }
      const std::string id = "i-" + std::to_string(++next_);
      instances[id] = argv.at(3);
      r.out = id + "\n";
    } else if (verb == "destroy") {
      ++destroys;
      instances.erase(argv.at(2));
    } else if (verb == "list") {
      for (const auto& [id, node] : instances) r.out += id + " " + node + "\n";
    }
    return r;
  }

  std::mutex mu_;
  std::map<std::string, std::string> instances;  // id -> node
  bool stockout = false;
  int creates = 0, destroys = 0, next_ = 0;
  std::string token;
};

class ExecProviderTest : public ::testing::Test {
 protected:
  void Make(config::ExecPoolSpec spec) {
    spec.pool = "spot";
    spec.create = {"/cloud", "create"};
    spec.destroy = {"/cloud", "destroy"};
    spec.list = {"/cloud", "list"};
    ExecProviderOptions o;
    o.pools = {spec};
    o.work_dir = "/tmp/frugal-exec-provider-test";
    provider_ = std::make_unique<ExecProvider>(
        o, store_, [this](auto& argv, auto& env, auto& cwd, auto t) {
          return cloud_(argv, env, cwd, t);
        });
    provider_->Start("http://127.0.0.1:1");
    model::Pool pool;
    pool.id = 7;
    pool.name = "spot";
    pool.kind = model::CapacityKind::kSpot;
    pool.gpu_type = "a100";
    pool.gpu_mem_gb = 80;
    snap_.pools = {pool};
    snap_.now = Timestamp{} + std::chrono::hours(1000);
    store_.SetNow(snap_.now);
  }

  // One cycle: annotate, the plan, apply; then let the command threads finish.
  void Cycle(const model::Plan& plan = {}) {
    model::Snapshot s = snap_;
    provider_->Annotate(s);
    annotated_ = s.pools[0];
    provider_->Apply(plan, snap_);
    Settle();
  }

  void Settle() {
    // Commands run on threads of their own; ours answer at once.
    const auto until = Clock::now() + std::chrono::seconds(5);
    for (;;) {
      bool busy = false;
      for (const auto& x : store_.All())
        if (x.state == InstanceState::kCreating) busy = true;
      if (!busy || Clock::now() > until) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  void Advance(Seconds s) {
    snap_.now += s;
    store_.SetNow(snap_.now);
  }

  model::Plan Request(int gpus) {
    model::Plan plan;
    plan.node_requests.push_back({7, gpus, "test", {}});
    return plan;
  }

  void Register(const std::string& node, model::NodeId id) {
    model::Node n;
    n.id = id;
    n.name = node;
    n.pool_id = 7;
    n.gpus = 1;
    snap_.nodes.push_back(n);
  }

  int Count(InstanceState s) {
    int n = 0;
    for (const auto& x : store_.All()) n += x.state == s;
    return n;
  }

  testing::MemoryInstanceStore store_{{"spot"}};
  ScriptedCloud cloud_;
  std::unique_ptr<ExecProvider> provider_;
  model::Snapshot snap_;
  model::Pool annotated_;
};

config::ExecPoolSpec Spec() {
  config::ExecPoolSpec s;
  s.node_gpus = 1;
  s.max_nodes = 3;
  s.max_concurrent_creates = 2;
  s.boot_timeout = Seconds(60);
  s.stockout_backoff = Seconds(1);
  s.leak_grace = Seconds(0);
  s.list_interval = Seconds(0);
  return s;
}

TEST_F(ExecProviderTest, RequestsBecomeCreatesWithinTheConcurrencyAndNodeLimits) {
  Make(Spec());
  Cycle(Request(5));  // 5 GPUs: 5 nodes wanted, 2 creates at once
  EXPECT_EQ(cloud_.creates, 2);
  EXPECT_EQ(Count(InstanceState::kBooting), 2);
  // Each instance has a join token of its own, and the store has only its hash.
  const auto hashes = store_.JoinTokens();
  ASSERT_EQ(hashes.size(), 2u);
  EXPECT_NE(hashes[0], hashes[1]);
  // The two creates run concurrently: the last token the cloud saw is either one's.
  EXPECT_TRUE(Sha256Hex(cloud_.token) == hashes[0] || Sha256Hex(cloud_.token) == hashes[1]);
  Cycle();  // annotate counts the booting ones as on their way
  EXPECT_TRUE(annotated_.elastic);
  EXPECT_EQ(annotated_.requested_gpus, 2);
  EXPECT_EQ(annotated_.max_gpus, 3);  // max_nodes x node_gpus
  Cycle(Request(5));
  EXPECT_EQ(cloud_.creates, 3);  // max_nodes
  EXPECT_EQ(Count(InstanceState::kBooting), 3);
}

TEST_F(ExecProviderTest, AStockoutBacksThePoolOffSoThePolicyLooksElsewhere) {
  Make(Spec());
  cloud_.stockout = true;
  Cycle(Request(1));
  EXPECT_EQ(cloud_.creates, 1);
  ASSERT_EQ(store_.All().size(), 1u);
  EXPECT_EQ(store_.All()[0].state, InstanceState::kGone);
  EXPECT_EQ(store_.All()[0].reason, "stockout");
  EXPECT_NE(store_.All()[0].detail.find("InsufficientInstanceCapacity"), std::string::npos);
  Cycle(Request(1));
  EXPECT_FALSE(annotated_.elastic);
  EXPECT_EQ(cloud_.creates, 1);  // not asked again while it backs off
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  cloud_.stockout = false;
  Cycle(Request(1));
  EXPECT_TRUE(annotated_.elastic);
  EXPECT_EQ(cloud_.creates, 2);
}

TEST_F(ExecProviderTest, ARegisteredNodeRunsAndAReleaseDestroysIt) {
  Make(Spec());
  Cycle(Request(1));
  const std::string node = store_.All()[0].node;
  Register(node, 11);
  Cycle();
  EXPECT_EQ(store_.All()[0].state, InstanceState::kRunning);
  model::Plan release;
  release.node_releases.push_back({11, "idle"});
  Cycle(release);
  EXPECT_EQ(cloud_.destroys, 1);
  EXPECT_EQ(store_.All()[0].state, InstanceState::kGone);
  EXPECT_EQ(store_.All()[0].reason, "idle");
  EXPECT_TRUE(cloud_.instances.empty());
}

TEST_F(ExecProviderTest, AnInstanceThatNeverRegistersIsDestroyedAtTheBootTimeout) {
  Make(Spec());
  Cycle(Request(1));
  Advance(Seconds(59));
  Cycle();
  EXPECT_EQ(cloud_.destroys, 0);
  Advance(Seconds(2));
  Cycle();
  EXPECT_EQ(cloud_.destroys, 1);
  EXPECT_EQ(store_.All()[0].reason, "boot_timeout");
  Cycle();
  EXPECT_FALSE(annotated_.elastic);  // the pool backs off
}

TEST_F(ExecProviderTest, ALeakIsRecordedAndDestroyedAndAVanishedInstanceEnds) {
  Make(Spec());
  Cycle(Request(1));
  const std::string mine = store_.All()[0].instance_id;
  Register(store_.All()[0].node, 11);
  Cycle();
  {
    std::lock_guard<std::mutex> lock(cloud_.mu_);
    cloud_.instances["i-stray"] = "someone-elses";  // listed, owned by no row
    cloud_.instances.erase(mine);                   // the cloud reclaimed ours
  }
  Advance(Seconds(5));
  Cycle();  // launches a list (list_interval 0)
  Cycle();  // applies it
  Cycle();
  std::map<std::string, std::string> reason;
  for (const auto& x : store_.All()) reason[x.instance_id] = x.reason;
  EXPECT_EQ(reason[mine], "vanished");
  EXPECT_EQ(reason["i-stray"], "leak");
  EXPECT_TRUE(cloud_.instances.empty());
  for (const auto& x : store_.All()) EXPECT_EQ(x.state, InstanceState::kGone) << x.node;
}

}  // namespace
}  // namespace frugal::provider
