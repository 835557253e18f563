// High availability that covers hangs, not only deaths (issue 17, decision 0020): two real
// frugal-scheduler processes on one PostgreSQL, a real frugal-worker given both URLs, and
// three faults of the leader: SIGKILL, SIGSTOP (then SIGCONT) and a cut from its database
// (its connections go through a proxy the test closes). After each: the standby places new
// work within a lease plus a cycle (with slack for a slow machine), the worker's lease and
// its running job live on, the old leader writes nothing, and the invariants hold.
//
// Each test prints "takeover after <fault>: <seconds> s", measured from the fault to the
// moment a job submitted after it is seen running.
#include <gtest/gtest.h>
#include <signal.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "scheduler/store/pg/pg_conn.h"
#include "tests/e2e/tcp_proxy.h"
#include "tests/testing/invariants.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/test_postgres.h"
#include "tests/testing/wait.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Leader lease 3 s, cycle 1 s: a standby takes over within 4 s of the leader's last renewal.
// Worker leases are 10 s so that a worker whose scheduler froze (its requests time out
// after 2 s) has time to fail over before its lease would lapse.
constexpr int kLeaderTtlS = 3;
constexpr int kCycleS = 1;
constexpr int kWorkerTtlS = 10;
const std::vector<std::string> kArgs = {
    "--leader-lease-ttl", std::to_string(kLeaderTtlS) + "s", "--cycle-interval",
    std::to_string(kCycleS) + "s", "--lease-ttl", std::to_string(kWorkerTtlS) + "s",
    "--heartbeat-interval", "1s"};
// The bound of a takeover: a lease and a cycle, plus 10 s of slack for a loaded machine
// (process scheduling, the worker's 2 s request timeout before it fails over).
constexpr auto kTakeoverBound = std::chrono::seconds(kLeaderTtlS + kCycleS + 10);

// The value of `key` in a libpq keyword/value connection string.
std::string ConnField(const std::string& conninfo, const std::string& key) {
  std::smatch m;
  if (!std::regex_search(conninfo, m, std::regex("(^| )" + key + "=([^ ]+)"))) return "";
  return m[2];
}

class HaE2eTest : public ::testing::Test {
 protected:
  void SetUp() override { conninfo_ = TestPostgres::Get().NewDatabase(); }

  void TearDown() override {
    // Every job cancelled and ended, then the invariants: no job ever had two active
    // attempts (no double placement across the failover), the ledger reconciles.
    if (!b_) return;
    SchedulerProcess& live = *b_;
    for (auto id : jobs_) {
      live.Call("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", user_token_);
    }
    const bool ended = WaitFor(
        [&] {
          for (auto id : jobs_) {
            const std::string s = State(live, id);
            if (s == "pending" || s == "running" || s == "held") return false;
          }
          return true;
        },
        std::chrono::seconds(40), std::chrono::milliseconds(250));
    EXPECT_TRUE(ended) << "jobs did not end after cancel";
    for (const auto& p : CheckInvariants(conninfo_, jobs_)) ADD_FAILURE() << p;
    worker_.reset();
  }

  // Starts the leader `a_` (its database through `a_database_url`), waits until it leads,
  // then the standby `b_` on the same database, the tokens, a pool and a three-GPU worker
  // that knows both schedulers.
  void StartPair(const std::string& a_database_url) {
    SchedulerProcess::Options oa;
    oa.database_url = a_database_url;
    oa.extra_args = kArgs;
    a_ = std::make_unique<SchedulerProcess>(oa);
    ASSERT_TRUE(WaitFor([&] { return Logged(*a_, "leadership_acquired"); },
                        std::chrono::seconds(30)))
        << a_->process().Stderr();
    SchedulerProcess::Options ob;
    ob.database_url = conninfo_;
    ob.extra_args = kArgs;
    ob.bootstrap = false;  // one database, bootstrapped once (by a_)
    b_ = std::make_unique<SchedulerProcess>(ob);
    worker_token_ = a_->NewToken("infra", "workers", "worker");
    user_token_ = a_->NewToken("vision", "alice");
    ASSERT_TRUE(CreatePool(*a_, PoolBody("od", "on_demand", "3.60", 64)));
    WorkerOptions w;
    w.url = a_->url() + "," + b_->url();
    w.token = worker_token_;
    w.pool = "od";
    w.node = "ha-node";
    w.gpus = 3;  // the job running through the fault, the one placed after, one more
    w.dir = dir_.path() + "/worker";
    w.checkpoint_root = dir_.path() + "/checkpoints";
    worker_ = std::make_unique<WorkerProcess>(w);
    // The standby stays a standby while the leader lives.
    ASSERT_TRUE(WaitFor([&] { return Metric(*b_, "frugal_leader_term") >= 1; },
                        std::chrono::seconds(10)));
    EXPECT_EQ(Metric(*b_, "frugal_is_leader"), 0);
    EXPECT_EQ(Metric(*a_, "frugal_is_leader"), 1);
  }

  static bool Logged(SchedulerProcess& s, const std::string& needle, std::size_t from = 0) {
    const std::string err = s.process().Stderr();
    return err.size() > from && err.find(needle, from) != std::string::npos;
  }

  // A job of one GPU that sleeps until cancelled, submitted through `s`.
  std::int64_t Submit(SchedulerProcess& s) {
    json body = {{"command", {"sleep", "600"}}, {"gpus", 1}};
    auto r = s.Call("POST", "/v1/jobs", user_token_, body.dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    if (r.status != 201) return 0;
    jobs_.push_back(r.body["id"].get<std::int64_t>());
    return jobs_.back();
  }

  std::string State(SchedulerProcess& s, std::int64_t id) {
    auto r = s.Call("GET", "/v1/jobs/" + std::to_string(id), user_token_);
    return r.body.is_object() ? r.body.value("state", "") : "";
  }

  json Job(SchedulerProcess& s, std::int64_t id) {
    return s.Call("GET", "/v1/jobs/" + std::to_string(id), user_token_).body;
  }

  // A gauge without labels from GET /metrics; -1 when absent or unreadable.
  double Metric(SchedulerProcess& s, const std::string& name) {
    auto r = s.Call("GET", "/metrics", a_->admin_token());
    std::smatch m;
    if (r.status != 200 ||
        !std::regex_search(r.raw, m, std::regex("(^|\n)" + name + " ([0-9.e+-]+)")))
      return -1;
    return std::stod(m[2]);
  }

  // One value from the test's database.
  std::string Query(const std::string& sql) {
    auto c = store::PgConn::Connect(conninfo_);
    if (!c.ok()) return "";
    auto r = (*c)->ExecScript(sql);
    return r.ok() && r->rows() > 0 ? r->Text(0, 0) : "";
  }

  // Seconds from `fault` until job `id` runs (placed by whichever scheduler now leads);
  // fails the test if that takes longer than kTakeoverBound. Prints the figure.
  double AwaitTakeover(std::int64_t id, Clock::time_point fault, const std::string& what) {
    const bool placed = WaitFor([&] { return State(*b_, id) == "running"; }, kTakeoverBound,
                                std::chrono::milliseconds(50));
    const double secs = std::chrono::duration<double>(Clock::now() - fault).count();
    std::printf("takeover after %s: %.2f s (bound %lld s: leader lease %d s + cycle %d s + "
                "slack)\n",
                what.c_str(), secs, static_cast<long long>(kTakeoverBound.count()), kLeaderTtlS,
                kCycleS);
    std::fflush(stdout);
    RecordProperty("takeover_seconds", std::to_string(secs));
    EXPECT_TRUE(placed) << "the standby placed nothing within the bound after " << what
                        << "\nstandby log:\n"
                        << b_->process().Stderr();
    EXPECT_TRUE(Logged(*b_, "leadership_acquired")) << b_->process().Stderr();
    return secs;
  }

  // The job started before the fault still runs its first attempt, and the worker renewed
  // its lease after the fault (through the standby): no node was lost.
  void ExpectWorkerKeptItsLease(std::int64_t running_job, const std::string& fault_db_time) {
    const bool renewed = WaitFor(
        [&] {
          return Query("SELECT bool_and(lease_expires_at > '" + fault_db_time +
                       "'::timestamptz + interval '" + std::to_string(kWorkerTtlS) +
                       " seconds') FROM nodes WHERE name = 'ha-node'") == "t";
        },
        std::chrono::seconds(kWorkerTtlS));
    EXPECT_TRUE(renewed) << "the worker renewed no lease after the fault\n"
                         << worker_->process().Stderr();
    json j = Job(*b_, running_job);
    EXPECT_EQ(j.value("state", ""), "running") << j.dump();
    EXPECT_EQ(j["attempt_history"].size(), 1u) << j.dump();
    EXPECT_EQ(Query("SELECT count(*) FROM nodes WHERE state = 'lost'"), "0");
  }

  // Starts a job and waits until it runs (before any fault).
  std::int64_t RunningJob() {
    const std::int64_t id = Submit(*a_);
    EXPECT_TRUE(WaitFor([&] { return State(*a_, id) == "running"; }, std::chrono::seconds(30)))
        << Job(*a_, id).dump() << "\n"
        << worker_->process().Stderr();
    return id;
  }

  std::string DbNow() { return Query("SELECT now()::text"); }

  TempDir dir_{"frugal-ha"};
  std::string conninfo_;
  std::unique_ptr<SchedulerProcess> a_, b_;
  std::unique_ptr<WorkerProcess> worker_;
  std::string worker_token_, user_token_;
  std::vector<std::int64_t> jobs_;
};

TEST_F(HaE2eTest, StandbyTakesOverAfterKillNineOfTheLeader) {
  ASSERT_NO_FATAL_FAILURE(StartPair(conninfo_));
  const std::int64_t running = RunningJob();
  // a. The leader dies without a word.
  const std::string fault_db = DbNow();
  const auto fault = Clock::now();
  a_->Kill();
  // b. New work is placed by the standby.
  const std::int64_t fresh = Submit(*b_);
  AwaitTakeover(fresh, fault, "kill -9");
  EXPECT_EQ(Metric(*b_, "frugal_is_leader"), 1);
  EXPECT_GE(Metric(*b_, "frugal_leader_term"), 2);
  // c. The worker failed over and kept its lease and its job.
  ExpectWorkerKeptItsLease(running, fault_db);
}

TEST_F(HaE2eTest, StandbyTakesOverFromAFrozenLeaderThatThenWritesNothing) {
  ASSERT_NO_FATAL_FAILURE(StartPair(conninfo_));
  const std::int64_t running = RunningJob();
  // a. The leader freezes: its process and its database sessions stay, it renews nothing.
  const std::string fault_db = DbNow();
  const auto fault = Clock::now();
  a_->process().Signal(SIGSTOP);
  // b. The standby takes over once the lease lapses.
  const std::int64_t fresh = Submit(*b_);
  AwaitTakeover(fresh, fault, "SIGSTOP");
  ExpectWorkerKeptItsLease(running, fault_db);
  // c. The old leader wakes up. It learns from its first renewal that its term ended, and
  //    from then on writes nothing: new work is placed once, by the new leader.
  const std::size_t mark = a_->process().Stderr().size();
  a_->process().Signal(SIGCONT);
  EXPECT_TRUE(WaitFor([&] { return Logged(*a_, "leadership_lost", mark); },
                      std::chrono::seconds(kLeaderTtlS + 5)))
      << a_->process().Stderr();
  const std::int64_t after = Submit(*a_);  // the old leader still serves the API
  EXPECT_TRUE(WaitFor([&] { return State(*a_, after) == "running"; }, std::chrono::seconds(15)))
      << Job(*a_, after).dump();
  const std::string woke = a_->process().Stderr().substr(mark);
  EXPECT_EQ(woke.find("jobs_started"), std::string::npos) << woke;
  EXPECT_EQ(woke.find("leadership_acquired"), std::string::npos) << woke;
  EXPECT_NE(woke.find("taken over"), std::string::npos) << woke;  // why it lost the term
  EXPECT_EQ(Metric(*a_, "frugal_is_leader"), 0);
  EXPECT_EQ(Metric(*b_, "frugal_is_leader"), 1);
  EXPECT_EQ(Metric(*a_, "frugal_leader_term"), Metric(*b_, "frugal_leader_term"));
  json j = Job(*b_, after);
  EXPECT_EQ(j["attempt_history"].size(), 1u) << j.dump();
}

TEST_F(HaE2eTest, StandbyTakesOverFromALeaderCutOffFromTheDatabase) {
  // The leader reaches PostgreSQL only through the proxy; the standby directly.
  const std::string socket = ConnField(conninfo_, "host") + "/.s.PGSQL." +
                             ConnField(conninfo_, "port");
  TcpProxy proxy(socket);
  const std::string via_proxy = "host=127.0.0.1 port=" + std::to_string(proxy.port()) +
                                " user=frugal dbname=" + ConnField(conninfo_, "dbname");
  ASSERT_NO_FATAL_FAILURE(StartPair(via_proxy));
  const std::int64_t running = RunningJob();
  // a. Every connection of the leader breaks and reconnecting is refused.
  const std::string fault_db = DbNow();
  const auto fault = Clock::now();
  proxy.Cut();
  // b.
  const std::int64_t fresh = Submit(*b_);
  AwaitTakeover(fresh, fault, "cut from the database");
  ExpectWorkerKeptItsLease(running, fault_db);
  // c. The cut-off leader gave up leadership by itself (its /metrics needs the database to
  //    authenticate, so its log says it).
  EXPECT_TRUE(WaitFor([&] { return Logged(*a_, "leadership_lost"); }, std::chrono::seconds(10)))
      << a_->process().Stderr();
  EXPECT_EQ(Metric(*b_, "frugal_is_leader"), 1);
}

}  // namespace
}  // namespace frugal::testing
