#include "config/config.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/temp_dir.h"

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
  EXPECT_EQ(c->policy, "placement/fifo");
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

TEST(ConfigTest, BadValuesAreRejected) {
  SchedulerConfig c;
  EXPECT_FALSE(SetKey(c, "listen", "nohostport").ok());
  EXPECT_FALSE(SetKey(c, "listen", "127.0.0.1:70000").ok());
  EXPECT_FALSE(SetKey(c, "db_pool_size", "0").ok());
  EXPECT_FALSE(SetKey(c, "cycle_interval", "soon").ok());
  EXPECT_TRUE(SetKey(c, "listen", "127.0.0.1:0").ok());
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
}

}  // namespace
}  // namespace frugal::config
