// The exec provider's command runner: real child processes (bash), no shell in between.
#include "scheduler/provider/command.h"

#include <gtest/gtest.h>

#include <chrono>

namespace frugal::provider {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

CommandResult Bash(const std::string& script, milliseconds timeout = milliseconds(10000),
                   std::vector<std::string> env = {"PATH=/usr/bin:/bin"}) {
  return RunCommand({"/bin/bash", "-c", script}, env, "/tmp", timeout);
}

TEST(RunCommandTest, KeepsStdoutAndTheTailOfStderrApart) {
  auto r = Bash("echo i-123; echo oops >&2; exit 0");
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.out, "i-123\n");
  EXPECT_EQ(r.err_tail, "oops\n");
}

TEST(RunCommandTest, ExitCodesAndSignalsAreReported) {
  EXPECT_EQ(Bash("exit 75").exit_code, 75);
  EXPECT_FALSE(Bash("exit 75").ok());
  EXPECT_EQ(Bash("kill -9 $$").exit_code, 128 + 9);
  auto r = Bash("echo no capacity >&2; exit 75");
  EXPECT_EQ(r.Describe(), "exit 75: no capacity");
}

TEST(RunCommandTest, OnlyTheGivenEnvironmentAndWorkingDirectory) {
  auto r = Bash("echo \"$FOO|${HOME:-none}|$PWD\"", milliseconds(10000),
                {"PATH=/usr/bin:/bin", "FOO=bar"});
  EXPECT_EQ(r.out, "bar|none|/tmp\n");
}

TEST(RunCommandTest, ATimeoutKillsTheWholeGroup) {
  const auto start = Clock::now();
  // A child of the command that would outlive it; the group signal reaches it too.
  auto r = Bash("sleep 30 & sleep 30; echo never", milliseconds(300));
  EXPECT_TRUE(r.timed_out);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.out, "");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(6));
}

TEST(RunCommandTest, ABackgroundProcessHoldingStdoutDoesNotHoldTheCaller) {
  const auto start = Clock::now();
  // The fake cloud's instances are such processes: started, detached, still running.
  auto r = Bash("echo i-9; setsid sleep 5 & exit 0");
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out, "i-9\n");
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
}

TEST(RunCommandTest, AMissingProgramSaysSo) {
  auto r = RunCommand({"/nonexistent/create"}, {}, "/tmp", milliseconds(1000));
  EXPECT_FALSE(r.ok());
  EXPECT_NE(r.Describe().find("/nonexistent/create"), std::string::npos) << r.Describe();
}

TEST(RunCommandTest, OutputIsCapped) {
  auto r = Bash("head -c 200000 /dev/zero | tr '\\0' x");
  EXPECT_TRUE(r.ok()) << r.Describe();
  EXPECT_EQ(r.out.size(), 64u * 1024);
}

}  // namespace
}  // namespace frugal::provider
