// frugal-keeper as the worker runs it (decision 0050): as root, a job under a uid of its
// own, its exit code or signal passed on as the keeper's own, descriptors 0-2 only, and
// nothing of the job left running once the keeper is gone when the worker dies.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"
#include "worker/process_runner.h"
#include "worker/uid_sweep.h"

namespace frugal::worker {
namespace {

using namespace std::chrono_literals;

// Outside the default job_uids range, so no worker of another test holds it.
constexpr uid_t kUid = 2000009990;
constexpr gid_t kGid = 65534;  // nogroup

class KeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "a job under its own uid needs root (CI is)";
  }
  void TearDown() override { KillAllOf(kUid); }  // whatever a failed test left

  // Runs `script` under the keeper as kUid and returns how it ended.
  ReapResult Run(const std::string& script) {
    SpawnSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.env = {"PATH=/usr/bin:/bin"};
    spec.cwd = "/";
    spec.output_path = output_;
    spec.identity = JobIdentity{kUid, kGid, true};
    spec.keeper = true;
    auto pid = runner_.Start(spec);
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    if (!pid.ok()) return {};
    ReapResult r;
    EXPECT_TRUE(testing::WaitFor([&] { return !(r = runner_.Reap(*pid)).running; }, 20s));
    return r;
  }
  std::string Output() const {
    std::ifstream in(output_);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  testing::TempDir dir_{"frugal-keeper-test"};
  std::string output_ = dir_.path() + "/out";
  PosixProcessRunner runner_{FRUGAL_KEEPER_BIN};
};

TEST_F(KeeperTest, TheJobRunsAsItsUidWithOnlyItsStandardFilesAndItsExitCodeIsTheKeepers) {
  const int held = open("/dev/null", O_RDONLY);  // not close-on-exec: must not reach the job
  ASSERT_GE(held, 3);
  const ReapResult r = Run("id -u; ls /proc/self/fd | wc -l; exit 3");
  close(held);
  EXPECT_EQ(r.exit_code, 3);
  // ls holds one descriptor of its own (the directory it lists) beside 0, 1 and 2.
  EXPECT_EQ(Output(), std::to_string(kUid) + "\n4\n");
}

TEST_F(KeeperTest, AJobKilledByASignalEndsTheKeeperByTheSameSignal) {
  const ReapResult r = Run("kill -TERM $$");
  EXPECT_EQ(r.exit_code, -SIGTERM);
}

TEST_F(KeeperTest, AProgramThatCannotStartIsReportedInTheOutputWith127) {
  SpawnSpec spec;
  spec.argv = {"./no-such-program"};
  spec.env = {"PATH=/usr/bin:/bin"};
  spec.cwd = dir_.path();
  spec.output_path = output_;
  spec.identity = JobIdentity{kUid, kGid, true};
  spec.keeper = true;
  auto pid = runner_.Start(spec);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ReapResult r;
  ASSERT_TRUE(testing::WaitFor([&] { return !(r = runner_.Reap(*pid)).running; }, 20s));
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(Output().find("cannot start the command"), std::string::npos) << Output();
}

TEST_F(KeeperTest, AMissingKeeperIsAClearError) {
  PosixProcessRunner runner(dir_.path() + "/frugal-keeper");
  SpawnSpec spec;
  spec.argv = {"/bin/true"};
  spec.cwd = "/";
  spec.output_path = output_;
  spec.keeper = true;
  auto pid = runner.Start(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(pid.status().message().find("beside frugal-worker"), std::string::npos);
}

}  // namespace
}  // namespace frugal::worker
