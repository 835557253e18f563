// `frugal-scheduler bootstrap` and its command line (issue 17): bootstrap opens only a
// database that exists, takes flags after the subcommand, and usage errors exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/testing/process.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"

namespace frugal::testing {
namespace {

namespace fs = std::filesystem;

EnvOverrides CleanEnv() { return {{"FRUGAL_HOME", ""}, {"FRUGAL_DATABASE_URL", ""}}; }

TEST(BootstrapTest, RefusesAStateDirectoryWithNoSchedulerData) {
  TempDir dir;
  const std::string state = dir.path() + "/nowhere";
  auto r = RunCommand({FRUGAL_SCHEDULER_BIN, "bootstrap", "--state-dir", state}, CleanEnv());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no scheduler data in " + state + "/pg"), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "no token for a database no scheduler uses: " << r.out;
  EXPECT_FALSE(fs::exists(state)) << "bootstrap must not create a second embedded database";
}

TEST(BootstrapTest, FlagsAfterTheSubcommandReachTheRunningSchedulersDatabase) {
  SchedulerProcess::Options o;
  o.bootstrap = false;
  SchedulerProcess sched(o);
  auto r = RunCommand({FRUGAL_SCHEDULER_BIN, "bootstrap", "--state-dir", sched.state_dir()},
                      CleanEnv());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("frg_", 0), 0u) << r.out;
  // Once per database: a second bootstrap is refused, so the first reached the same one.
  auto again = RunCommand({FRUGAL_SCHEDULER_BIN, "--state-dir", sched.state_dir(), "bootstrap"},
                          CleanEnv());
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.exit_code, 2) << "a refused bootstrap is not a usage error: " << again.err;
}

TEST(BootstrapTest, UsageErrorsExitTwo) {
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {FRUGAL_SCHEDULER_BIN, "--no-such-flag"},
           {FRUGAL_SCHEDULER_BIN, "bootstrap", "extra"},
           {FRUGAL_SCHEDULER_BIN, "--listen"}}) {
    auto r = RunCommand(argv, CleanEnv());
    EXPECT_EQ(r.exit_code, 2) << argv.back() << ": " << r.err;
    EXPECT_FALSE(r.err.empty());
  }
  EXPECT_EQ(RunCommand({FRUGAL_SCHEDULER_BIN, "--help"}, CleanEnv()).exit_code, 0);
}

}  // namespace
}  // namespace frugal::testing
