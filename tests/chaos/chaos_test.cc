// Chaos, end to end (issue 15): a stream of checkpointing jobs over the API while the test
// SIGKILLs, at seeded random times, the scheduler, a worker (with its jobs: a lost node) or
// PostgreSQL, and brings each back on the same state. Afterwards every acknowledged job must
// end, and the invariants of tests/testing/invariants.h must hold. Besides, each job takes
// an flock on a file of its own before it starts: an attempt that finds the lock taken
// means two processes of one job were alive at once, which the database alone cannot see.
//
// FRUGAL_CHAOS_SECONDS (default 180) sets how long the kills go on; FRUGAL_CHAOS_SEED
// replays a run (the seed is printed first). Long campaigns: FRUGAL_CHAOS_SECONDS=1800.
// Half the worker kills SIGKILL the frugal-worker process alone: its jobs must die with it
// (the keeper, decision 0019) and never run beside the next attempt.
// FRUGAL_CHAOS_AGENT_KILLS=0 kills workers only together with their jobs.
#include <gtest/gtest.h>

#include <filesystem>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "tests/chaos/chaos_cluster.h"
#include "tests/testing/invariants.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

long EnvOr(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtol(v, nullptr, 10) : fallback;
}

// The job: take the job's lock (or record that another live process holds it), note the
// start, then run examples/train.sh. Children inherit fd 9, so the lock is held until the
// last process of the attempt has exited.
std::string JobScript() {
  // umask 0: attempts run under uids of their own, and each must open the job's lock file.
  return R"(umask 000
exec 9>>"$CHAOS_DIR/lock-$FRUGAL_JOB_ID-rank-${NODE_RANK:-0}"
if ! flock -n 9; then
  echo "job $FRUGAL_JOB_ID rank ${NODE_RANK:-0} attempt $FRUGAL_ATTEMPT (pid $$) started while another process of it held its lock" >>"$CHAOS_DIR/overlaps"
fi
echo "start $FRUGAL_JOB_ID $FRUGAL_ATTEMPT $$ ${NODE_RANK:-0}" >>"$CHAOS_DIR/runs"
exec bash )" + std::string(FRUGAL_TRAIN_SH);
}

class Chaos {
 public:
  Chaos(ChaosCluster& cluster, std::uint64_t seed, const std::string& dir, bool agent_kills)
      : cluster_(cluster), rng_(seed), dir_(dir), agent_kills_(agent_kills) {}

  // Submits one job of 10..40 steps of 0.1 s, a checkpoint every 5; keeps its id if the API
  // acknowledged it (201). One in four is a 2-node gang (decision 0032): each rank holds a
  // lock of its own, and a kill of either node must stop and requeue the whole gang.
  void Submit() {
    std::uniform_int_distribution<int> steps(10, 40), gang(0, 3);
    json body = {{"command", {"bash", "-c", JobScript()}},
                 {"env",
                  {{"TRAIN_STEPS", std::to_string(steps(rng_))},
                   {"CHECKPOINT_EVERY", "5"},
                   {"STEP_SECONDS", "0.1"},
                   {"FRUGAL_CLI", FRUGAL_CLI_BIN},
                   {"CHAOS_DIR", dir_}}},
                 {"tolerance", "checkpointed"},
                 {"max_attempts", 100}};
    const bool is_gang = gang(rng_) == 0;
    if (is_gang) body.update({{"nodes", 2}, {"gpus", 2}});
    auto r = cluster_.sched().Call("POST", "/v1/jobs", cluster_.user_token(), body.dump());
    ++submitted_;
    if (r.status == 201 && r.body.is_object()) {
      acknowledged_.push_back(r.body["id"].get<std::int64_t>());
      gangs_ += is_gang;
    }
  }

  // One kill and its recovery, chosen at random; returns what it did.
  std::string KillSomething() {
    std::uniform_int_distribution<int> kind(0, 9), pause_ms(0, 3000);
    std::uniform_int_distribution<int> which(0, cluster_.worker_count() - 1);
    const int k = kind(rng_);
    const milliseconds pause(pause_ms(rng_));
    std::string what;
    bool back = true;
    if (k < 3) {  // 30 %: the scheduler
      what = "scheduler";
      cluster_.KillScheduler();
      std::this_thread::sleep_for(pause);
      back = cluster_.RestartScheduler();
    } else if (k < 8) {  // 50 %: a worker node
      const int i = which(rng_);
      if (agent_kills_ && k % 2 == 0) {
        what = "agent " + std::to_string(i);
        cluster_.KillWorkerAgentOnly(i);
      } else {
        what = "worker " + std::to_string(i);
        cluster_.KillWorker(i);
      }
      std::this_thread::sleep_for(pause);
      back = cluster_.RestartWorker(i);
    } else {  // 20 %: PostgreSQL
      what = "postgres";
      cluster_.KillPostgres();
      std::this_thread::sleep_for(pause);
      back = cluster_.RestartPostgres();
    }
    ++kills_[what.substr(0, what.find(' '))];
    EXPECT_TRUE(back) << what << " did not come back";
    return what + " (down " + std::to_string(pause.count()) + " ms)";
  }

  void Run(seconds duration) {
    std::uniform_int_distribution<int> submit_gap_ms(1000, 3000), kill_gap_ms(4000, 12000);
    const auto end = Clock::now() + duration;
    auto next_submit = Clock::now();
    auto next_kill = Clock::now() + milliseconds(kill_gap_ms(rng_));
    while (Clock::now() < end) {
      if (Clock::now() >= next_submit) {
        Submit();
        next_submit = Clock::now() + milliseconds(submit_gap_ms(rng_));
      }
      if (Clock::now() >= next_kill) {
        std::printf("chaos: kill %d: %s\n", ++cycles_, KillSomething().c_str());
        next_kill = Clock::now() + milliseconds(kill_gap_ms(rng_));
      }
      Revive();
      std::this_thread::sleep_for(milliseconds(200));
    }
  }

  void Revive() {
    for (const auto& line : cluster_.ReviveExited()) {
      std::printf("chaos: %s\n", line.c_str());
      ++self_exits_;
    }
  }

  // The state of each acknowledged job that has not ended yet, waiting up to `limit`.
  std::map<std::int64_t, std::string> WaitForAllTerminal(seconds limit) {
    static const std::set<std::string> kTerminal = {"succeeded", "failed", "cancelled",
                                                    "timed_out"};
    std::map<std::int64_t, std::string> open;
    for (auto id : acknowledged_) open[id] = "?";
    WaitFor(
        [&] {
          Revive();
          for (auto it = open.begin(); it != open.end();) {
            auto r = cluster_.sched().Call("GET", "/v1/jobs/" + std::to_string(it->first),
                                           cluster_.user_token());
            const std::string state = r.body.is_object() ? r.body.value("state", "?") : "?";
            if (kTerminal.count(state)) {
              ++ended_[state];
              it = open.erase(it);
            } else {
              it->second = state;
              ++it;
            }
          }
          return open.empty();
        },
        limit, milliseconds(1000));
    return open;
  }

  const std::vector<std::int64_t>& acknowledged() const { return acknowledged_; }
  std::string Summary() const {
    std::string s = "kill cycles survived: " + std::to_string(cycles_) + " (";
    for (const auto& [what, n] : kills_) s += what + " " + std::to_string(n) + ", ";
    s += "exited on their own " + std::to_string(self_exits_) + "); jobs submitted " +
         std::to_string(submitted_) + ", acknowledged " + std::to_string(acknowledged_.size()) +
         " (2-node gangs " + std::to_string(gangs_) + ")";
    for (const auto& [state, n] : ended_) s += ", " + state + " " + std::to_string(n);
    return s;
  }

 private:
  ChaosCluster& cluster_;
  std::mt19937_64 rng_;
  std::string dir_;
  bool agent_kills_;
  std::vector<std::int64_t> acknowledged_;
  int submitted_ = 0, cycles_ = 0, self_exits_ = 0, gangs_ = 0;
  std::map<std::string, int> kills_, ended_;
};

TEST(ChaosTest, KillsLoseNoAcknowledgedJobAndNeverRunOneTwice) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // ctest's log shows each kill as it happens
  const seconds duration(EnvOr("FRUGAL_CHAOS_SECONDS", 180));
  const auto seed = static_cast<std::uint64_t>(EnvOr("FRUGAL_CHAOS_SEED", std::random_device{}()));
  std::printf("chaos: seed %llu (FRUGAL_CHAOS_SEED=%llu replays the kill schedule), %lld s\n",
              static_cast<unsigned long long>(seed), static_cast<unsigned long long>(seed),
              static_cast<long long>(duration.count()));
  std::fflush(stdout);
  TempDir dir("frugal-chaos");
  ChaosCluster cluster(dir.path(), /*workers=*/3);
  // Jobs run under uids of their own: their marks go to a directory anyone may write (not
  // sticky, so a job may append to a file an earlier attempt of it created).
  const std::string marks = dir.path() + "/marks";
  std::filesystem::create_directories(marks);
  std::filesystem::permissions(marks, std::filesystem::perms::all);
  Chaos chaos(cluster, seed, marks, EnvOr("FRUGAL_CHAOS_AGENT_KILLS", 1) != 0);

  // a. Kills at random while jobs arrive.
  chaos.Run(duration);
  // b. Calm: every acknowledged job must end. Each takes at most ~4 s of work; the backlog
  // drains on 3 one-GPU workers.
  auto open = chaos.WaitForAllTerminal(seconds(300) + duration);
  for (const auto& [id, state] : open) ADD_FAILURE() << "job " << id << " never ended: " << state;
  // c. The database's view: terminal, one active attempt at a time, checkpoints forward, ledger.
  for (const auto& p : CheckInvariants(cluster.Conninfo(), chaos.acknowledged())) ADD_FAILURE() << p;
  // d. The processes' view: no job ever had two live attempts.
  const std::string overlaps = ReadFile(marks + "/overlaps");
  EXPECT_TRUE(overlaps.empty()) << overlaps;
  const std::string runs = ReadFile(marks + "/runs");
  const long starts = std::count(runs.begin(), runs.end(), '\n');
  // Every acknowledged job ran at least once: the check above saw real processes.
  EXPECT_GE(starts, static_cast<long>(chaos.acknowledged().size()));
  std::printf("chaos: seed %llu: %s; %ld process starts\n", static_cast<unsigned long long>(seed),
              chaos.Summary().c_str(), starts);
}

}  // namespace
}  // namespace frugal::testing
