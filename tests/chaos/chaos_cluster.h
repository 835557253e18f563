// The system under chaos (tests/chaos): a PostgreSQL cluster the test owns, one
// frugal-scheduler on it at a fixed address, and frugal-worker processes on one pool, each
// of which can be killed with SIGKILL and brought back on the same state.
//
// PostgreSQL runs with fsync and synchronous commit on (unlike the other tests' throwaway
// cluster): after a SIGKILL of the postmaster, a commit the API acknowledged must survive,
// and with synchronous_commit=off it legitimately may not.
//
// Threading: one thread (the test's). Every method may block for seconds.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "scheduler/store/pg/pg_server.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/worker_fixture.h"

namespace frugal::testing {

class ChaosCluster {
 public:
  // Starts PostgreSQL, the scheduler (bootstrapped, with a pool "od" and the tokens) and
  // `workers` workers of one GPU each. Throws std::runtime_error if any of it fails.
  ChaosCluster(const std::string& dir, int workers);
  ~ChaosCluster();

  const SchedulerProcess& sched() const { return *sched_; }
  const std::string& user_token() const { return user_token_; }
  // libpq connection string of the scheduler's database (for the invariant checks).
  std::string Conninfo() const;
  int worker_count() const { return static_cast<int>(workers_.size()); }

  // SIGKILL. The scheduler and PostgreSQL come back on the same state with Restart*;
  // a worker is killed with every job it started (a node that vanished).
  void KillScheduler();
  void KillWorker(int i);
  // SIGKILL of the frugal-worker process alone: its jobs live on, orphaned, as on a host
  // where nothing (systemd's control group, a container) takes them down with it.
  void KillWorkerAgentOnly(int i);
  void KillPostgres();
  // True when it runs again (retries for up to a minute: the scheduler exits when its
  // database is gone at start, PostgreSQL refuses to start while old backends linger).
  bool RestartScheduler();
  bool RestartWorker(int i);
  bool RestartPostgres();

  // Brings back whatever has exited on its own (a scheduler that lost its database may
  // stop by design); returns a line per process restarted, for the log.
  std::vector<std::string> ReviveExited();

 private:
  std::unique_ptr<SchedulerProcess> StartScheduler(bool bootstrap);
  std::unique_ptr<WorkerProcess> StartWorker(int i);
  pid_t PostmasterPid() const;  // 0 when there is no pid file
  bool PostgresAlive() const;

  std::string dir_;
  std::string listen_;
  std::unique_ptr<store::PgServer> pg_;
  std::unique_ptr<SchedulerProcess> sched_;
  std::vector<std::unique_ptr<WorkerProcess>> workers_;
  std::string worker_token_, user_token_;
  pid_t killed_postmaster_ = 0;  // until RestartPostgres has seen it gone
};

}  // namespace frugal::testing
