#include "config/config.h"

#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cstdlib>

#include "config/yaml_settings.h"

namespace frugal::config {

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

namespace {

StatusOr<int> ParseInt(const std::string& key, const std::string& v, int lo, int hi) {
  try {
    size_t used = 0;
    long n = std::stol(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return static_cast<int>(n);
  } catch (...) {
  }
  return InvalidArgument(key + " must be an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "], got '" + v + "'",
                         key);
}

StatusOr<Seconds> ParsePositiveDuration(const std::string& key, const std::string& v) {
  auto d = ParseDuration(v);
  if (!d.ok()) return InvalidArgument(key + ": " + d.status().message(), key);
  if (d->count() < 1) return InvalidArgument(key + ": must be at least 1s", key);
  return *d;
}

bool IsPolicyDuration(const std::string& key) {
  return key == "min_run_time" || key == "restore_time" || key == "wait_horizon" ||
         key == "max_wait_without_deadline" || key == "fair_share_half_life";
}

}  // namespace

Status SetKey(SchedulerConfig& c, const std::string& key, const std::string& v) {
  if (key == "database_url") {
    c.database_url = v;
  } else if (key == "state_dir") {
    if (v.empty()) return InvalidArgument("state_dir must not be empty", key);
    c.state_dir = v;
  } else if (key == "listen") {
    std::string host;
    int port;
    RETURN_IF_ERROR(SplitHostPort(v, host, port));
    c.listen = v;
  } else if (key == "log_level") {
    c.log_level = v;
  } else if (key == "policy") {
    c.policy = v;
  } else if (key == "cycle_interval") {
    auto d = ParseDuration(v);
    if (!d.ok()) return InvalidArgument("cycle_interval: " + d.status().message(), key);
    c.cycle_interval = *d;
  } else if (key == "leader_lease_ttl") {
    auto d = ParseDuration(v);
    if (!d.ok()) return InvalidArgument(key + ": " + d.status().message(), key);
    if (d->count() < 1) return InvalidArgument(key + ": must be at least 1s", key);
    c.leader_lease_ttl = *d;
  } else if (key == "lease_ttl" || key == "heartbeat_interval") {
    auto d = ParseDuration(v);
    if (!d.ok()) return InvalidArgument(key + ": " + d.status().message(), key);
    (key == "lease_ttl" ? c.lease_ttl : c.heartbeat_interval) = *d;
  } else if (key == "availability_refit_interval") {
    auto d = ParseDuration(v);
    if (!d.ok()) return InvalidArgument(key + ": " + d.status().message(), key);
    if (d->count() < 1) return InvalidArgument(key + ": must be at least 1s", key);
    c.availability_refit_interval = *d;
  } else if (key == "worker_bin") {
    c.worker_bin = v;
  } else if (key == "db_statement_timeout" || key == "db_lock_timeout") {
    auto d = ParseDuration(v);
    if (!d.ok()) return InvalidArgument(key + ": " + d.status().message(), key);
    if (d->count() < 1) return InvalidArgument(key + ": must be at least 1s", key);
    (key == "db_statement_timeout" ? c.db_statement_timeout : c.db_lock_timeout) = *d;
  } else if (key == "db_pool_size") {
    ASSIGN_OR_RETURN(c.db_pool_size, ParseInt(key, v, 1, 256));
  } else if (key == "max_connections") {
    ASSIGN_OR_RETURN(c.max_connections, ParseInt(key, v, 8, 65536));
  } else if (key == "max_pending_per_cycle") {
    ASSIGN_OR_RETURN(c.max_pending_per_cycle, ParseInt(key, v, 1, 1000000));
  } else if (key == "max_pending_per_team") {
    ASSIGN_OR_RETURN(c.max_pending_per_team, ParseInt(key, v, 1, 1000000));
  } else if (IsPolicyDuration(key)) {
    ASSIGN_OR_RETURN(Seconds d, ParsePositiveDuration(key, v));
    if (key == "min_run_time") c.min_run_time = d;
    if (key == "restore_time") c.restore_time = d;
    if (key == "wait_horizon") c.wait_horizon = d;
    if (key == "max_wait_without_deadline") c.max_wait_without_deadline = d;
    if (key == "fair_share_half_life") c.fair_share_half_life = d;
  } else if (key == "max_preemptions_per_cycle") {
    ASSIGN_OR_RETURN(c.max_preemptions_per_cycle, ParseInt(key, v, 0, 100000));
  } else if (key == "learned_spot_control") {
    if (v != "true" && v != "false")
      return InvalidArgument(key + " must be true or false, got '" + v + "'", key);
    c.learned_spot_control = v == "true";
  } else {
    return InvalidArgument(
        "unknown configuration key '" + key +
            "' (database_url, state_dir, listen, log_level, policy, "
            "cycle_interval, db_pool_size, max_connections, db_statement_timeout, db_lock_timeout, "
            "max_pending_per_cycle, max_pending_per_team, lease_ttl, leader_lease_ttl, "
            "heartbeat_interval, availability_refit_interval, worker_bin, local_workers, "
            "exec_pools, min_run_time, restore_time, wait_horizon, "
            "max_wait_without_deadline, fair_share_half_life, "
            "max_preemptions_per_cycle, learned_spot_control)",
        key);
  }
  return Status::Ok();
}

Status SplitHostPort(const std::string& listen, std::string& host, int& port) {
  auto colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return InvalidArgument("listen must be HOST:PORT, got '" + listen + "'", "listen");
  }
  host = listen.substr(0, colon);
  ASSIGN_OR_RETURN(port, ParseInt("listen", listen.substr(colon + 1), 0, 65535));
  return Status::Ok();
}

StatusOr<SchedulerConfig> LoadSchedulerConfig(const std::string& yaml_path, const EnvLookup& env) {
  SchedulerConfig c;
  RETURN_IF_ERROR(ReadYamlSettings(yaml_path, [&](const std::string& key, const YAML::Node& value) -> Status {
    if (key == "local_workers") {
      auto workers = ParseLocalWorkers(value);
      if (!workers.ok()) return Status(workers.status().code(), workers.status().message(), key);
      c.local_workers = std::move(*workers);
      return Status::Ok();
    }
    if (key == "exec_pools") {
      auto pools = ParseExecPools(value);
      if (!pools.ok()) return Status(pools.status().code(), pools.status().message(), key);
      c.exec_pools = std::move(*pools);
      return Status::Ok();
    }
    ASSIGN_OR_RETURN(std::string text, ScalarText(key, value));
    return SetKey(c, key, text);
  }));
  const char* keys[] = {"database_url",
                        "listen",
                        "log_level",
                        "policy",
                        "cycle_interval",
                        "db_pool_size",
                        "max_pending_per_cycle",
                        "max_pending_per_team",
                        "lease_ttl",
                        "heartbeat_interval",
                        "db_statement_timeout",
                        "db_lock_timeout",
                        "leader_lease_ttl",
                        "availability_refit_interval",
                        "min_run_time",
                        "restore_time",
                        "wait_horizon",
                        "max_wait_without_deadline",
                        "fair_share_half_life",
                        "max_preemptions_per_cycle",
                        "learned_spot_control",
                        "max_connections"};
  for (const char* key : keys) {
    std::string name = "FRUGAL_";
    for (const char* p = key; *p; ++p) name += static_cast<char>(std::toupper(*p));
    if (auto v = env(name)) RETURN_IF_ERROR(SetKey(c, key, *v));
  }
  if (auto home = env("FRUGAL_HOME"); home && !home->empty()) c.state_dir = *home;
  return c;
}

}  // namespace frugal::config
