#include "config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "scheduler/app/policy_settings.h"
#include "tests/testing/temp_dir.h"
#include "worker/worker_config.h"

namespace frugal::config {
namespace {

EnvLookup NoEnv() {
  return [](const std::string&) { return std::optional<std::string>(); };
}

TEST(ConfigTest, DefaultsWithoutFileOrEnv) {
  auto c = LoadSchedulerConfig("", NoEnv());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->listen, "127.0.0.1:8080");
  EXPECT_EQ(c->state_dir, ".frugal");
  EXPECT_TRUE(c->database_url.empty());
  EXPECT_EQ(c->policy, "placement/cost");
}

TEST(ConfigTest, EnvironmentOverridesFile) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/frugal.yaml";
  std::ofstream(path) << "listen: 0.0.0.0:9000\nlog_level: debug\ncycle_interval: 5s\n";
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "FRUGAL_LISTEN") return "127.0.0.1:9100";
    if (name == "FRUGAL_HOME") return "/var/lib/frugal";
    return std::nullopt;
  };
  auto c = LoadSchedulerConfig(path, env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->listen, "127.0.0.1:9100");  // env beats file
  EXPECT_EQ(c->log_level, "debug");        // file beats default
  EXPECT_EQ(c->cycle_interval.count(), 5);
  EXPECT_EQ(c->state_dir, "/var/lib/frugal");
}

TEST(ConfigTest, UnknownKeyIsAnErrorNamingIt) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/frugal.yaml";
  std::ofstream(path) << "listen: 127.0.0.1:1\ndatabse_url: postgres://x\n";
  auto c = LoadSchedulerConfig(path, NoEnv());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().field(), "databse_url");
}

// Both binaries read their settings file the same way: each mistake names the file and,
// where there is one, the key.
TEST(ConfigTest, SettingsFileMistakesNameTheFileAndKey) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/settings.yaml";
  auto scheduler = [&] { return LoadSchedulerConfig(path, NoEnv()).status(); };
  auto worker = [&] { return worker::LoadWorkerConfig(path, NoEnv()).status(); };
  for (const auto& load : {std::function<Status()>(scheduler), std::function<Status()>(worker)}) {
    std::filesystem::remove(path);
    Status missing = load();
    EXPECT_EQ(missing.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(missing.message().find("cannot read config " + path), std::string::npos)
        << missing.message();
    std::ofstream(path) << "- a\n- b\n";
    Status list = load();
    EXPECT_EQ(list.message(), path + ": top level must be a mapping");
    std::ofstream(path) << "log_level: [debug]\n";
    Status nested = load();
    EXPECT_EQ(nested.message(), path + ": 'log_level' must be a scalar");
    EXPECT_EQ(nested.field(), "log_level");
    std::ofstream(path) << "";
    EXPECT_TRUE(load().ok()) << "an empty file sets nothing";
  }
  // The worker reads its keys from the file too (the environment's token on top).
  std::ofstream(path) << "log_level: debug\npool: a100-spot\n";
  auto w = worker::LoadWorkerConfig(path, NoEnv());
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->log_level, "debug");
  EXPECT_EQ(w->pool, "a100-spot");
}

// Found by tests/fuzz/scheduler_config_fuzz: a key that is not text threw out of the loader
// (std::terminate in frugal-scheduler) instead of returning an error.
TEST(ConfigTest, KeyThatIsNotTextIsAnError) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/c.yaml";
  std::ofstream(path) << "listen: 127.0.0.1:1\n? [a, b]\n: 1\n";
  auto c = LoadSchedulerConfig(path, NoEnv());
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("keys must be plain text"), std::string::npos)
      << c.status().message();
}

TEST(ConfigTest, BadValuesAreRejected) {
  SchedulerConfig c;
  EXPECT_FALSE(SetKey(c, "listen", "nohostport").ok());
  EXPECT_FALSE(SetKey(c, "listen", "127.0.0.1:70000").ok());
  EXPECT_FALSE(SetKey(c, "db_pool_size", "0").ok());
  EXPECT_FALSE(SetKey(c, "cycle_interval", "soon").ok());
  EXPECT_FALSE(SetKey(c, "leader_lease_ttl", "0s").ok());
  EXPECT_TRUE(SetKey(c, "leader_lease_ttl", "3s").ok());
  EXPECT_EQ(c.leader_lease_ttl.count(), 3);
  EXPECT_TRUE(SetKey(c, "listen", "127.0.0.1:0").ok());
}

TEST(ConfigTest, MaxConnectionsDefaultsTo512AndComesFromTheFileOrEnvironment) {
  auto defaults = LoadSchedulerConfig("", NoEnv());
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults->max_connections, 512);
  SchedulerConfig c;
  EXPECT_FALSE(SetKey(c, "max_connections", "7").ok());
  EXPECT_FALSE(SetKey(c, "max_connections", "65537").ok());
  EXPECT_FALSE(SetKey(c, "max_connections", "many").ok());
  EXPECT_TRUE(SetKey(c, "max_connections", "2048").ok());
  EXPECT_EQ(c.max_connections, 2048);
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "FRUGAL_MAX_CONNECTIONS") return "64";
    return std::nullopt;
  };
  auto from_env = LoadSchedulerConfig("", env);
  ASSERT_TRUE(from_env.ok()) << from_env.status().ToString();
  EXPECT_EQ(from_env->max_connections, 64);
}

}  // namespace
}  // namespace frugal::config

namespace frugal::config {
namespace {

TEST(ConfigTest, AnnotatedExampleLoads) {
  auto c = LoadSchedulerConfig(std::string(FRUGAL_SOURCE_DIR) + "/config/scheduler.example.yaml",
                               NoEnv());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cycle_interval.count(), 2);
  EXPECT_EQ(c->leader_lease_ttl.count(), 6);
  EXPECT_EQ(c->availability_refit_interval.count(), 300);
}

TEST(ConfigTest, PolicyKnobsComeFromTheFileOrEnvironmentAndTheRestKeepTheirDefaults) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/frugal.yaml";
  std::ofstream(path) << "min_run_time: 30m\nwait_horizon: 2h\nlearned_spot_control: false\n";
  auto env = [](const std::string& name) -> std::optional<std::string> {
    if (name == "FRUGAL_MAX_PREEMPTIONS_PER_CYCLE") return "4";
    return std::nullopt;
  };
  auto c = LoadSchedulerConfig(path, env);
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  const policy::PolicyConfig p = app::PolicyConfigFor(*c);
  EXPECT_EQ(p.min_run_time, Seconds(1800));
  EXPECT_EQ(p.wait_horizon, Seconds(7200));
  EXPECT_FALSE(p.learned_spot_control);
  EXPECT_EQ(p.max_preemptions_per_cycle, 4);
  // Not set: the policy's own defaults, as the scheduler runs them.
  const policy::PolicyConfig defaults;
  EXPECT_EQ(p.restore_time, defaults.restore_time);
  EXPECT_EQ(p.fair_share_half_life, defaults.fair_share_half_life);
  EXPECT_FALSE(p.spread_large_jobs);
  EXPECT_TRUE(p.multi_node_gangs);
  // Mistakes name the key.
  SchedulerConfig bad;
  EXPECT_EQ(SetKey(bad, "restore_time", "0s").field(), "restore_time");
  EXPECT_EQ(SetKey(bad, "learned_spot_control", "yes").field(), "learned_spot_control");
  EXPECT_EQ(SetKey(bad, "max_preemptions_per_cycle", "-1").field(), "max_preemptions_per_cycle");
}

TEST(ConfigTest, AvailabilityRefitIntervalIsADurationOfAtLeastASecond) {
  SchedulerConfig c;
  ASSERT_TRUE(SetKey(c, "availability_refit_interval", "2m").ok());
  EXPECT_EQ(c.availability_refit_interval.count(), 120);
  EXPECT_EQ(SetKey(c, "availability_refit_interval", "0s").field(), "availability_refit_interval");
  EXPECT_FALSE(SetKey(c, "availability_refit_interval", "soon").ok());
}

}  // namespace
}  // namespace frugal::config

namespace frugal::config {
namespace {

std::string WriteYaml(testing::TempDir& dir, const std::string& text) {
  const std::string path = dir.path() + "/frugal.yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(LocalWorkersConfigTest, ParsesPoolsAndPreemptionSources) {
  testing::TempDir dir;
  auto c = LoadSchedulerConfig(WriteYaml(dir, R"(
local_workers:
  - pool: a100-reserved
    nodes: 1
    gpus_per_node: 2
  - pool: a100-spot
    nodes: 2
    gpus_per_node: 4
    grace: 3s
    preemption: {rate_per_node_hour: 12, seed: 9}
  - pool: v100-spot
    preemption: {trace: t.csv, zone: us-east-1c, speedup: 600, start_s: 3600}
)"),
                               NoEnv());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->local_workers.size(), 3u);
  EXPECT_EQ(c->local_workers[0].gpus_per_node, 2);
  EXPECT_EQ(c->local_workers[0].preemption.kind, PreemptionSpec::Kind::kNone);
  const auto& spot = c->local_workers[1];
  EXPECT_EQ(spot.nodes, 2);
  EXPECT_EQ(spot.grace.count(), 3);
  EXPECT_EQ(spot.preemption.kind, PreemptionSpec::Kind::kRate);
  EXPECT_DOUBLE_EQ(spot.preemption.rate_per_node_hour, 12);
  EXPECT_EQ(spot.preemption.seed, 9u);
  const auto& trace = c->local_workers[2].preemption;
  EXPECT_EQ(trace.kind, PreemptionSpec::Kind::kTrace);
  EXPECT_EQ(trace.zone, "us-east-1c");
  EXPECT_DOUBLE_EQ(trace.speedup, 600);
  EXPECT_DOUBLE_EQ(trace.start_s, 3600);
}

TEST(LocalWorkersConfigTest, MistakesNameTheEntryAndKey) {
  testing::TempDir dir;
  struct Case {
    const char* yaml;
    const char* says;
  } cases[] = {
      {"local_workers: {pool: x}\n", "must be a list"},
      {"local_workers:\n  - nodes: 1\n", "local_workers[0].pool: is required"},
      {"local_workers:\n  - pool: a\n  - pool: b\n    gpus: 2\n", "local_workers[1].gpus: unknown"},
      {"local_workers:\n  - pool: a\n    nodes: 0\n", "nodes: must be >= 1 unless max_nodes"},
      {"local_workers:\n  - pool: a\n    nodes: 65\n", "nodes: must be in [0, 64]"},
      {"local_workers:\n  - pool: a\n    nodes: 3\n    max_nodes: 2\n", "at least nodes"},
      {"local_workers:\n  - pool: a\n    nodes: many\n", "nodes: has the wrong type"},
      {"local_workers:\n  - pool: a\n  - pool: a\n", "listed twice"},
      {"local_workers:\n  - pool: a\n    preemption: {trace: t.csv}\n", "zone: is required"},
      {"local_workers:\n  - pool: a\n    preemption: {rate_per_node_hour: -1}\n", "must be > 0"},
      {"local_workers:\n  - pool: a\n    preemption: {rate_per_node_hour: 1, trace: t, zone: z}\n",
       "not both"},
      {"local_workers:\n  - pool: a\n    grace: soon\n", "grace"},
  };
  for (const auto& k : cases) {
    auto c = LoadSchedulerConfig(WriteYaml(dir, k.yaml), NoEnv());
    ASSERT_FALSE(c.ok()) << k.yaml;
    EXPECT_NE(c.status().message().find(k.says), std::string::npos)
        << k.yaml << " -> " << c.status().message();
  }
}

TEST(ExecPoolsConfigTest, ParsesCommandsEnvAndTimeouts) {
  testing::TempDir dir;
  auto c = LoadSchedulerConfig(WriteYaml(dir, R"(
exec_pools:
  - pool: aws-spot
    node_gpus: 8
    max_nodes: 16
    create: /opt/cloud create
    destroy: [/opt/cloud, destroy]
    list: /opt/list
    worker_url: https://frugal.internal:8080
    env: {AWS_REGION: us-west-2}
    boot_timeout: 5m
    stockout_backoff: 90s
    max_concurrent_creates: 2
)"),
                               NoEnv());
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  ASSERT_EQ(c->exec_pools.size(), 1u);
  const auto& p = c->exec_pools[0];
  EXPECT_EQ(p.node_gpus, 8);
  EXPECT_EQ(p.max_nodes, 16);
  EXPECT_EQ(p.create, (std::vector<std::string>{"/opt/cloud", "create"}));
  EXPECT_EQ(p.destroy, (std::vector<std::string>{"/opt/cloud", "destroy"}));
  EXPECT_EQ(p.list, (std::vector<std::string>{"/opt/list"}));
  EXPECT_EQ(p.worker_url, "https://frugal.internal:8080");
  EXPECT_EQ(p.env.at("AWS_REGION"), "us-west-2");
  EXPECT_EQ(p.boot_timeout.count(), 300);
  EXPECT_EQ(p.stockout_backoff.count(), 90);
  EXPECT_EQ(p.max_concurrent_creates, 2);
  EXPECT_EQ(p.leak_grace.count(), 300);  // a default
}

TEST(ExecPoolsConfigTest, MistakesNameTheEntryAndKey) {
  testing::TempDir dir;
  const std::string cmds = "    create: /c\n    destroy: /d\n    list: /l\n";
  struct Case {
    std::string yaml;
    const char* says;
  } cases[] = {
      {"exec_pools: {pool: x}\n", "must be a list"},
      {"exec_pools:\n  - node_gpus: 1\n" + cmds, "exec_pools[0].pool: is required"},
      {"exec_pools:\n  - pool: a\n    destroy: /d\n    list: /l\n", "create: is required"},
      {"exec_pools:\n  - pool: a\n    node_gpus: 0\n" + cmds, "node_gpus: must be in [1, 64]"},
      {"exec_pools:\n  - pool: a\n    size: 3\n" + cmds, "exec_pools[0].size: unknown key"},
      {"exec_pools:\n  - pool: a\n    env: {FRUGAL_JOIN_TOKEN: x}\n" + cmds, "reserved"},
      {"exec_pools:\n  - pool: a\n    env: {9X: x}\n" + cmds, "not a variable name"},
      {"exec_pools:\n  - pool: a\n    boot_timeout: later\n" + cmds, "boot_timeout"},
      {"exec_pools:\n  - pool: a\n" + cmds + "  - pool: a\n" + cmds, "listed twice"},
  };
  for (const auto& k : cases) {
    auto c = LoadSchedulerConfig(WriteYaml(dir, k.yaml), NoEnv());
    ASSERT_FALSE(c.ok()) << k.yaml;
    EXPECT_NE(c.status().message().find(k.says), std::string::npos)
        << k.yaml << " -> " << c.status().message();
  }
}

}  // namespace
}  // namespace frugal::config
