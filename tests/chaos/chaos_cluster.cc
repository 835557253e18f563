#include "tests/chaos/chaos_cluster.h"

#include <signal.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "scheduler/store/pg/migrations.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/wait.h"

namespace frugal::testing {

namespace {

// Leases and cycles short enough that a lost worker is noticed in seconds: heartbeat 1 s,
// TTL 3 s, cycle 1 s (as tests/worker).
const std::vector<std::string> kFastLeases = {"--lease-ttl", "3s", "--heartbeat-interval", "1s",
                                              "--cycle-interval", "1s"};

bool Exited(ChildProcess& p) { return p.Wait(std::chrono::milliseconds(0)).has_value(); }

// The last `n` characters of `text`: where a dying process says why.
std::string Tail(const std::string& text, std::size_t n) {
  return text.size() <= n ? text : text.substr(text.size() - n);
}

}  // namespace

ChaosCluster::ChaosCluster(const std::string& dir, int workers)
    : dir_(dir), listen_("127.0.0.1:" + std::to_string(FreePort())) {
  pg_ = std::make_unique<store::PgServer>(
      store::PgServerOptions{dir_ + "/pg", 5432, /*fast_unsafe=*/false});
  if (Status st = pg_->Start(); !st.ok()) throw std::runtime_error(st.ToString());
  if (Status st = store::EnsureDatabase(pg_->ConnString("postgres"), "frugal"); !st.ok()) {
    throw std::runtime_error(st.ToString());
  }
  sched_ = StartScheduler(/*bootstrap=*/true);
  worker_token_ = sched_->NewToken("infra", "workers", "worker");
  user_token_ = sched_->NewToken("vision", "alice");
  auto pool = CreatePool(*sched_, PoolBody("od", "on_demand", "3.60", 64));
  if (!pool) throw std::runtime_error(pool.message());
  for (int i = 0; i < workers; ++i) workers_.push_back(StartWorker(i));
}

ChaosCluster::~ChaosCluster() {
  workers_.clear();  // each one Crash()es: the worker and its jobs
  sched_.reset();    // SIGTERM
  (void)pg_->Stop(/*force=*/true);
}

std::string ChaosCluster::Conninfo() const { return pg_->ConnString("frugal"); }

std::unique_ptr<SchedulerProcess> ChaosCluster::StartScheduler(bool bootstrap) {
  SchedulerProcess::Options o;
  o.database_url = Conninfo();
  o.listen = listen_;  // the workers and the test find it again after a restart
  o.state_dir = dir_ + "/scheduler-state";
  o.extra_args = kFastLeases;
  o.bootstrap = bootstrap;
  return std::make_unique<SchedulerProcess>(o);
}

std::unique_ptr<WorkerProcess> ChaosCluster::StartWorker(int i) {
  WorkerOptions o;
  o.url = "http://" + listen_;
  o.token = worker_token_;
  o.pool = "od";
  o.node = "chaos-" + std::to_string(i);
  o.dir = dir_ + "/" + o.node;
  o.checkpoint_root = dir_ + "/checkpoints";
  o.grace = "5s";
  return std::make_unique<WorkerProcess>(o);
}

void ChaosCluster::KillScheduler() { sched_->Kill(); }

void ChaosCluster::KillWorker(int i) { workers_.at(i)->Crash(); }

void ChaosCluster::KillWorkerAgentOnly(int i) {
  workers_.at(i)->process().Signal(SIGKILL);
  workers_.at(i)->process().Wait(std::chrono::seconds(10));
}

pid_t ChaosCluster::PostmasterPid() const {
  // The first line of postmaster.pid; the file outlives a killed postmaster.
  std::ifstream pid_file(pg_->data_dir() + "/postmaster.pid");
  pid_t pid = 0;
  return pid_file >> pid && pid > 1 ? pid : 0;
}

bool ChaosCluster::PostgresAlive() const {
  // kill(0) instead of pg_ctl status: this runs several times a second.
  const pid_t pid = PostmasterPid();
  return pid > 0 && kill(pid, 0) == 0;
}

void ChaosCluster::KillPostgres() {
  // The backends notice their postmaster's death and exit on their own, as after a crash.
  killed_postmaster_ = PostmasterPid();
  if (killed_postmaster_) kill(killed_postmaster_, SIGKILL);
}

bool ChaosCluster::RestartScheduler() {
  return WaitFor(
      [&] {
        try {
          sched_ = StartScheduler(/*bootstrap=*/false);
          return true;
        } catch (const std::exception&) {
          return false;
        }
      },
      std::chrono::seconds(60), std::chrono::milliseconds(500));
}

bool ChaosCluster::RestartWorker(int i) {
  workers_.at(i) = StartWorker(i);
  return !Exited(workers_.at(i)->process());
}

bool ChaosCluster::RestartPostgres() {
  // Until the killed postmaster is reaped (by init, not by us) pg_ctl status still finds
  // it and Start() would return at once without starting anything.
  if (killed_postmaster_) {
    WaitFor([&] { return kill(killed_postmaster_, 0) != 0; }, std::chrono::seconds(30));
    killed_postmaster_ = 0;
  }
  return WaitFor([&] { return pg_->Start().ok(); }, std::chrono::seconds(60),
                 std::chrono::milliseconds(500));
}

std::vector<std::string> ChaosCluster::ReviveExited() {
  std::vector<std::string> revived;
  if (!PostgresAlive()) {
    revived.push_back(RestartPostgres() ? "postgres restarted" : "postgres did not restart");
  }
  if (Exited(sched_->process())) {
    revived.push_back("scheduler exited on its own: " + Tail(sched_->process().Stderr(), 400));
    if (!RestartScheduler()) revived.push_back("scheduler did not restart");
  }
  for (int i = 0; i < worker_count(); ++i) {
    if (!Exited(workers_[i]->process())) continue;
    revived.push_back("worker " + std::to_string(i) + " exited on its own");
    RestartWorker(i);
  }
  return revived;
}

}  // namespace frugal::testing
