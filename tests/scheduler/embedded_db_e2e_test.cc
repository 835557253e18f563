// The embedded PostgreSQL's first start killed half-way (issue 15): a scheduler SIGKILLed
// (with its initdb) while the cluster is being created must leave a state directory that
// the next start can use.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/testing/process.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

namespace fs = std::filesystem;

// Any PG_VERSION below `pg_dir`: initdb writes it early, into whichever directory it fills.
bool InitdbHasBegun(const std::string& pg_dir) {
  std::error_code ec;
  if (!fs::is_directory(pg_dir, ec)) return false;
  for (const auto& e : fs::directory_iterator(pg_dir, ec)) {
    if (fs::exists(e.path() / "PG_VERSION", ec)) return true;
  }
  return false;
}

pid_t ParentOf(const std::string& pid) {
  std::ifstream stat("/proc/" + pid + "/stat");
  std::string line;
  std::getline(stat, line);
  auto close = line.rfind(')');  // comm may hold spaces: read after the last ')'
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  char state;
  pid_t ppid = 0;
  rest >> state >> ppid;
  return ppid;
}

// `root` and every process below it, as /proc shows them now.
std::set<pid_t> Tree(pid_t root) {
  std::set<pid_t> tree = {root};
  for (bool grew = true; grew;) {
    grew = false;
    DIR* proc = opendir("/proc");
    while (dirent* e = readdir(proc)) {
      const pid_t pid = std::atoi(e->d_name);
      if (pid > 0 && !tree.count(pid) && tree.count(ParentOf(e->d_name))) {
        tree.insert(pid);
        grew = true;
      }
    }
    closedir(proc);
  }
  return tree;
}

// SIGKILL as a power cut would: stop the whole tree first so nothing forks past the kill.
void KillTree(pid_t root) {
  for (int pass = 0; pass < 3; ++pass) {
    for (pid_t p : Tree(root)) kill(p, SIGSTOP);
  }
  for (pid_t p : Tree(root)) kill(p, SIGKILL);
}

TEST(EmbeddedDbE2eTest, KillDuringInitdbThenACleanStartSucceeds) {
  TempDir dir("frugal-initdb-kill");
  const std::string state = dir.path() + "/state";
  const EnvOverrides env = {{"FRUGAL_HOME", ""}, {"FRUGAL_DATABASE_URL", ""}};
  const std::vector<std::string> argv = {FRUGAL_SCHEDULER_BIN, "--listen", "127.0.0.1:0",
                                         "--state-dir", state};

  // (a) The first start: SIGKILL the scheduler and its initdb once initdb has written
  // PG_VERSION (the scheduler and every process below it, initdb included, as with a power cut).
  {
    ChildProcess first(argv, env, dir.path() + "/first");
    ASSERT_TRUE(WaitFor([&] { return InitdbHasBegun(state + "/pg"); }, std::chrono::seconds(60),
                        std::chrono::milliseconds(5)))
        << first.Stdout() << first.Stderr();
    KillTree(first.pid());
    first.Wait(std::chrono::seconds(10));
  }

  // (b) A clean start on the same state directory comes up and answers /healthz.
  ChildProcess second(argv, env, dir.path() + "/second");
  auto line = second.WaitForOutput("listening on http://", std::chrono::seconds(120));
  ASSERT_TRUE(line.has_value()) << second.Stdout() << second.Stderr();
  second.Signal(SIGTERM);
  EXPECT_EQ(second.Wait(std::chrono::seconds(60)).value_or(-999), 0) << second.Stderr();
}

}  // namespace
}  // namespace frugal::testing
