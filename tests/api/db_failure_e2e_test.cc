// The API while PostgreSQL misbehaves (issue 15): a hung server (SIGSTOP) must turn /readyz
// to 503 quickly while /healthz keeps answering, and a connection killed under the
// scheduler must answer 503 (or succeed), never 500. Real scheduler, real PostgreSQL.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_conn.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/test_postgres.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using json = nlohmann::json;
using SteadyClock = std::chrono::steady_clock;

// The postmaster (first line of postmaster.pid) and every process it started.
std::vector<pid_t> PostgresPids(const std::string& data_dir) {
  std::ifstream pidfile(data_dir + "/postmaster.pid");
  pid_t postmaster = 0;
  pidfile >> postmaster;
  std::vector<pid_t> out;
  if (postmaster <= 0) return out;
  out.push_back(postmaster);
  DIR* proc = opendir("/proc");
  while (dirent* e = readdir(proc)) {
    const pid_t pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    // "pid (comm) state ppid ...": comm may hold spaces, so read after the last ')'.
    auto close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state;
    pid_t ppid = 0;
    rest >> state >> ppid;
    if (ppid == postmaster) out.push_back(pid);
  }
  closedir(proc);
  return out;
}

// SIGSTOPs the whole test cluster; SIGCONTs it when destroyed, whatever the test did.
class FrozenPostgres {
 public:
  explicit FrozenPostgres(const std::string& data_dir) : pids_(PostgresPids(data_dir)) {
    for (pid_t p : pids_) kill(p, SIGSTOP);
  }
  ~FrozenPostgres() { Thaw(); }
  void Thaw() {
    for (pid_t p : pids_) kill(p, SIGCONT);
    pids_.clear();
  }
  size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

std::string JobBody() {
  return json{{"name", "db-fail"}, {"command", {"python", "train.py"}}, {"gpus", 1}}.dump();
}

TEST(DbFailureE2eTest, HungPostgresTurnsReadyzTo503WhileHealthzAnswers) {
  SchedulerProcess::Options options;
  options.database_url = TestPostgres::Get().NewDatabase();
  SchedulerProcess sched(options);
  const std::string alice = sched.NewToken("dbf", "alice");
  ASSERT_EQ(sched.Call("GET", "/readyz", "").status, 200);

  // (a) Freeze PostgreSQL for 20 s. /readyz must say 503 within 5 s of the freeze.
  FrozenPostgres frozen(TestPostgres::Get().cluster().data_dir());
  ASSERT_GE(frozen.size(), 1u);
  const auto frozen_at = SteadyClock::now();
  auto seconds_since = [&] {
    return std::chrono::duration<double>(SteadyClock::now() - frozen_at).count();
  };
  double detected_s = -1;
  int ready_status = 0;
  while (seconds_since() < 10) {
    ready_status = sched.Call("GET", "/readyz", "").status;
    if (ready_status == 503) {
      detected_s = seconds_since();
      break;
    }
  }
  std::printf("hung database: /readyz answered 503 after %.2f s of SIGSTOP\n", detected_s);
  EXPECT_EQ(ready_status, 503);
  EXPECT_GE(detected_s, 0);
  EXPECT_LT(detected_s, 5.0);

  // (b) /healthz answers 200 throughout, each call within 5 s.
  int health_calls = 0;
  double worst_health_s = 0;
  while (seconds_since() < 20) {
    const auto start = SteadyClock::now();
    auto r = sched.Call("GET", "/healthz", "");
    const double took = std::chrono::duration<double>(SteadyClock::now() - start).count();
    worst_health_s = std::max(worst_health_s, took);
    EXPECT_EQ(r.status, 200) << r.raw;
    ++health_calls;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  std::printf("hung database: /healthz %d calls, slowest %.2f s\n", health_calls, worst_health_s);
  EXPECT_LT(worst_health_s, 5.0);

  // (c) After SIGCONT everything recovers: ready again and a submit succeeds (60 s bound).
  frozen.Thaw();
  EXPECT_TRUE(WaitFor([&] { return sched.Call("GET", "/readyz", "").status == 200; },
                      std::chrono::seconds(60)));
  HttpResult submit;
  EXPECT_TRUE(WaitFor(
      [&] {
        submit = sched.Call("POST", "/v1/jobs", alice, JobBody());
        return submit.status == 201;
      },
      std::chrono::seconds(60)))
      << submit.status << " " << submit.raw;
}

TEST(DbFailureE2eTest, KilledBackendsAnswer503OrSucceedNever500) {
  SchedulerProcess::Options options;
  options.database_url = TestPostgres::Get().NewDatabase();
  SchedulerProcess sched(options);
  const std::string alice = sched.NewToken("dbk", "alice");
  auto admin = store::PgConn::Connect(options.database_url);
  ASSERT_TRUE(admin.ok()) << admin.status().ToString();

  // Five rounds: open several pooled connections with parallel submits, kill every
  // backend of this database but ours, then submit once and look at the answer.
  int ok = 0, unavailable = 0;
  for (int round = 0; round < 5; ++round) {
    std::vector<std::thread> warm;
    for (int i = 0; i < 4; ++i) {
      warm.emplace_back([&] { (void)sched.Call("POST", "/v1/jobs", alice, JobBody()); });
    }
    for (auto& t : warm) t.join();
    auto killed = (*admin)->Exec("kill_backends",
                                 "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                 " WHERE datname = current_database() AND pid <> pg_backend_pid()");
    ASSERT_TRUE(killed.ok()) << killed.status().ToString();
    ASSERT_GE(killed->Int(0, 0), 1);

    auto r = sched.Call("POST", "/v1/jobs", alice, JobBody());
    std::printf("round %d: %lld backends killed, then POST /v1/jobs answered %d\n", round,
                static_cast<long long>(killed->Int(0, 0)), r.status);
    EXPECT_TRUE(r.status == 201 || r.status == 503) << r.status << " " << r.raw;
    if (r.status == 503) {
      ++unavailable;
      bool retry_after = false;
      for (const auto& [k, v] : r.headers) retry_after = retry_after || k == "Retry-After";
      EXPECT_TRUE(retry_after) << r.raw;
    }
    ok += r.status == 201 ? 1 : 0;
  }
  std::printf("killed backends: %d submits succeeded, %d answered 503\n", ok, unavailable);

  // Mid-request: four clients submit back to back for 6 s while every backend of this
  // database is killed every 50 ms. Each answer is 201 or 503 with Retry-After.
  std::atomic<bool> stop{false};
  std::atomic<int> created{0}, refused{0}, other{0};
  std::vector<std::thread> clients;
  for (int i = 0; i < 4; ++i) {
    clients.emplace_back([&] {
      while (!stop) {
        auto r = sched.Call("POST", "/v1/jobs", alice, JobBody());
        bool retry_after = false;
        for (const auto& [k, v] : r.headers) retry_after = retry_after || k == "Retry-After";
        if (r.status == 201) {
          ++created;
        } else if (r.status == 503 && retry_after) {
          ++refused;
        } else {
          ++other;
          std::fprintf(stderr, "mid-request kill: POST /v1/jobs answered %d: %s\n", r.status,
                       r.raw.c_str());
        }
      }
    });
  }
  int kills = 0;
  const auto end = SteadyClock::now() + std::chrono::seconds(6);
  while (SteadyClock::now() < end) {
    auto killed = (*admin)->Exec("kill_backends",
                                 "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                                 " WHERE datname = current_database() AND pid <> pg_backend_pid()");
    ASSERT_TRUE(killed.ok()) << killed.status().ToString();
    kills += static_cast<int>(killed->Int(0, 0));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  stop = true;
  for (auto& t : clients) t.join();
  std::printf("mid-request kills: %d backends killed; submits: %d created, %d answered 503, "
              "%d anything else\n", kills, created.load(), refused.load(), other.load());
  EXPECT_EQ(other, 0);
  EXPECT_GT(created, 0);
}

}  // namespace
}  // namespace frugal::testing
