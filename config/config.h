// Typed configuration of frugal-scheduler. Precedence, lowest first: defaults, the YAML
// file (--config), FRUGAL_* environment variables, command-line flags (applied by main).
// Unknown YAML keys are errors that name the key, so a typo never silently does nothing.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "config/exec_pools.h"
#include "config/local_workers.h"

namespace frugal::config {

struct SchedulerConfig {
  std::string database_url;          // empty: embedded PostgreSQL under state_dir
  std::string state_dir = ".frugal";  // $FRUGAL_HOME
  std::string listen = "127.0.0.1:8080";
  std::string log_level = "info";
  std::string policy = "placement/cost";
  Seconds cycle_interval{2};
  // The leader lease (decision 0020): renewed every cycle; a standby takes over within
  // about this plus one cycle_interval after the leader stops renewing (dies, freezes,
  // loses the database). Must exceed cycle_interval (main refuses otherwise).
  Seconds leader_lease_ttl{6};
  int db_pool_size = 8;
  // The API's open connections (decision 0018's edge, a thread each): more are answered 503
  // and closed at once. Each node holds one for its dispatch poll and one more while it
  // reports in a burst (decision 0053), so a scheduler serves about half this many busy
  // nodes. The process's open-file limit is raised to fit at start (decision 0055).
  int max_connections = 512;
  // Every pooled connection's statement_timeout and lock_timeout (decision 0018): a query
  // or lock wait longer than this fails with 503 instead of holding a connection.
  Seconds db_statement_timeout{30};
  Seconds db_lock_timeout{10};
  int max_pending_per_cycle = 10000;
  int max_pending_per_team = 1000;  // decision 0035
  Seconds lease_ttl{15};          // a worker's lease; lost after this without a heartbeat
  Seconds heartbeat_interval{2};  // told to workers at registration
  // How often each spot pool's availability model is refitted from its node lives, in the
  // background (decision 0023). Shorter learns an outage sooner; each refit reads every
  // node life of the spot pools (measured: well under a second per pool).
  Seconds availability_refit_interval{300};
  // The `local` provider: workers this process starts itself (YAML only, not env/flags).
  std::vector<LocalWorkerSpec> local_workers;
  // The `exec` provider: pools of cloud instances made by admin commands (YAML only).
  std::vector<ExecPoolSpec> exec_pools;
  std::string worker_bin;  // empty: frugal-worker next to frugal-scheduler

  // placement/cost's knobs (scheduler/policy/policy_config.h says what each does); unset
  // keeps the policy's default, so the defaults live in one place. The composition root
  // (scheduler/app/policy_settings.h) copies what is set into the PolicyConfig.
  std::optional<Seconds> min_run_time;               // no priority preemption before this
  std::optional<Seconds> restore_time;               // resuming from a checkpoint costs this
  std::optional<Seconds> wait_horizon;               // slack beyond which waiting is free
  std::optional<Seconds> max_wait_without_deadline;  // a job without one waits at most this
  std::optional<Seconds> fair_share_half_life;       // usage this old counts half
  std::optional<int> max_preemptions_per_cycle;      // stops for priority per cycle
  std::optional<bool> learned_spot_control;          // decide spot by the learned DP
};

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// Defaults, then `yaml_path` (if not empty), then the environment through `env`.
StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& yaml_path, const EnvLookup& env);

// Applies one key (as named in YAML) from text; used by the file, env and flag layers.
Status SetKey(SchedulerConfig& c, const std::string& key, const std::string& value);

// "host:port" -> parts; port must be 0..65535 (0 = pick a free port).
Status SplitHostPort(const std::string& listen, std::string& host, int& port);

}  // namespace frugal::config
