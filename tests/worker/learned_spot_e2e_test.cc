// The learned spot controller end to end (issue 14, decision 0023): a real scheduler whose
// local provider runs a spot pool (replaying a trace) and an on-demand pool of the same GPU
// type, with the store refitting each spot pool's availability chain in the background. The
// test imports one history after another with `frugal admin pool history import`, watches
// the model change (`frugal admin pool availability`), watches the controller's priced
// options change (`frugal submit --dry-run` JSON "learned", `frugal why` JSON "options"),
// and checks that a checkpointed deadline job really runs where the controller said.
// Tables are solved in the background, so everything is polled with a deadline.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"
#include "tests/testing/temp_dir.h"
#include "tests/testing/wait.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

std::string Show(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

// A trace in the shared traces' format, zone z1, one probe per 180 s tick: `cycles` times an
// up spell of `up(c)` ticks followed by a down spell of `down` ticks; its rows.
int WriteTrace(const std::string& path, int cycles, const std::function<int(int)>& up, int down) {
  std::ofstream f(path);
  f << "zone,tick,elapsed_s,timestamp_utc,available,spot_usd_hr\n";
  int tick = 0;
  for (int c = 0; c < cycles; ++c) {
    for (int i = 0; i < up(c) + down; ++i, ++tick) {
      f << "z1," << tick << "," << tick * 180 << ",," << (i < up(c) ? 1 : 0) << ",1.00\n";
    }
  }
  return tick;
}

class LearnedSpotE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Calm: up for 12 h at a time, out for one tick. Stormy: up for 3 to 9 minutes (1 to 3
    // ticks), never long enough for a checkpoint (every 45 minutes), then out for 72 minutes;
    // 300 such cycles, so that its 600 up ticks outweigh the prior (10 hours of the admin's
    // reclaim rate). Spells of up to 30 minutes would not do: the chain's bins hold ages 6-9
    // together, with a constant hazard, so it gives such a pool some chance of an hour up.
    calm_ = dir_.path() + "/calm.csv";
    stormy_ = dir_.path() + "/stormy.csv";
    calm_rows_ = WriteTrace(calm_, 20, [](int) { return 240; }, 1);
    stormy_rows_ = WriteTrace(stormy_, 300, [](int c) { return 1 + c % 3; }, 24);
    const std::string config = dir_.path() + "/scheduler.yaml";
    // The spot pool's local worker replays the calm trace in real time: it stays up for the
    // whole test. The refit interval is short, yet well above a table's solve (1-3 s): each
    // refit with a live node is a new model, and its tables are solved afresh.
    std::ofstream(config)
        << "lease_ttl: 3s\nheartbeat_interval: 1s\ncycle_interval: 1s\n"
        << "availability_refit_interval: 20s\n"
        << "local_workers:\n"
        << "  - {pool: spot, gpus_per_node: 2, restart_delay: 1s, grace: 2s,\n"
        << "     preemption: {trace: " << calm_ << ", zone: z1, speedup: 1}}\n"
        << "  - {pool: od, gpus_per_node: 2, restart_delay: 1s}\n";
    SchedulerProcess::Options o;
    o.extra_args = {"--config", config};
    sched_ = std::make_unique<SchedulerProcess>(o);
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.00", 8)));
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("od", "on_demand", "3.00", 8)));
    user_ = sched_->NewToken("vision", "alice");
  }

  CommandResult Frugal(const std::vector<std::string>& args, const std::string& token) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, sched_->CliEnv(token));
  }

  json Availability() {
    auto r = Frugal({"admin", "pool", "availability", "spot", "-o", "json"}, sched_->admin_token());
    EXPECT_EQ(r.exit_code, 0) << Show(r);
    return r.exit_code == 0 ? json::parse(r.out) : json();
  }

  void Import(const std::string& file) {
    auto r = Frugal({"admin", "pool", "history", "import", "spot", file, "--zone", "z1"},
                    sched_->admin_token());
    ASSERT_EQ(r.exit_code, 0) << Show(r);
    EXPECT_NE(r.out.find("Pool spot:"), std::string::npos) << r.out;
  }

  // A 1-hour job due in 4 hours that checkpoints every 45 minutes.
  json JobBody(std::int64_t after = 0) {
    const auto due = std::chrono::time_point_cast<std::chrono::seconds>(
        std::chrono::system_clock::now() + std::chrono::hours(4));
    json body = {{"command", {"sleep", "600"}},       {"gpus", 1},
            {"gpu_types", {"a100"}},             {"estimate_seconds", 3600},
            {"deadline", FormatRfc3339(due)},    {"tolerance", "checkpointed"},
            {"checkpoint_interval_seconds", 2700}, {"max_attempts", 1}};
    if (after != 0) body["after"] = {after};
    return body;
  }

  // The spot pool's entry of `list` (quote "learned" or why "options"), or null.
  static json SpotEntry(const json& list) {
    if (!list.is_array()) return json();
    for (const auto& e : list)
      if (e.value("pool", "") == "spot") return e;
    return json();
  }

  // Whether a spot entry's table is solved and its action is one of `want`.
  static bool Solved(const json& e, const std::vector<std::string>& want) {
    if (e.is_null() || !e.value("ready", false)) return false;
    const std::string action = e.value("action", "");
    return std::find(want.begin(), want.end(), action) != want.end();
  }

  // Polls the dry-run quote until the controller's table for the spot pool is solved and
  // its action is one of `want`; returns that entry (null on timeout, with the last quote).
  json WaitForQuote(const std::vector<std::string>& want, std::string* last) {
    json found;
    WaitFor([&] {
      auto r = sched_->Call("POST", "/v1/jobs?dry_run=true", user_, JobBody().dump());
      *last = r.raw;
      if (r.status != 200) return false;
      json e = SpotEntry(r.body["quote"]["learned"]);
      if (!Solved(e, want)) return false;
      found = e;
      return true;
    }, std::chrono::seconds(120), std::chrono::milliseconds(500));
    return found;
  }

  std::int64_t Submit(std::int64_t after = 0) {
    auto r = sched_->Call("POST", "/v1/jobs", user_, JobBody(after).dump());
    EXPECT_EQ(r.status, 201) << r.raw;
    return r.body.value("id", std::int64_t{0});
  }

  json Why(std::int64_t id) {
    return sched_->Call("GET", "/v1/jobs/" + std::to_string(id) + "/why", user_).body;
  }
  json Job(std::int64_t id) {
    return sched_->Call("GET", "/v1/jobs/" + std::to_string(id), user_).body;
  }

  // `frugal why` of a job that cannot start (it waits for another) until its options for the
  // spot pool are priced with an action in `want`; returns the why JSON's options entry.
  json WhyOptions(std::int64_t id, const std::vector<std::string>& want, json* why_out) {
    json found;
    WaitFor([&] {
      auto r = Frugal({"why", std::to_string(id), "-o", "json"}, user_);
      if (r.exit_code != 0) return false;
      *why_out = json::parse(r.out, nullptr, false);
      if (why_out->is_discarded()) return false;
      json e = SpotEntry((*why_out)["options"]);
      if (!Solved(e, want)) return false;
      found = e;
      return true;
    }, std::chrono::seconds(120), std::chrono::milliseconds(500));
    return found;
  }

  static void ExpectPriced(json e) {  // by value: [] on a missing key is null
    EXPECT_TRUE(e["expected_cost"].is_string()) << e.dump(2);
    EXPECT_GT(std::stod(e["expected_cost"].get<std::string>()), 0.0) << e.dump(2);
    EXPECT_TRUE(e["cost_sd"].is_string()) << e.dump(2);
    EXPECT_TRUE(e["expected_reclaims"].is_number()) << e.dump(2);
    EXPECT_GE(e["expected_reclaims"].get<double>(), 0.0) << e.dump(2);
    EXPECT_TRUE(e["deadline_risk"].is_number()) << e.dump(2);
    EXPECT_GE(e["deadline_risk"].get<double>(), 0.0) << e.dump(2);
    EXPECT_LE(e["deadline_risk"].get<double>(), 1.0) << e.dump(2);
    ASSERT_TRUE(e["pool_state"].is_object()) << e.dump(2);
    EXPECT_EQ(e["pool_state"]["up"], true) << e.dump(2);  // the local spot node is up
    EXPECT_TRUE(e["pool_state"]["spell_seconds"].is_number()) << e.dump(2);
    EXPECT_TRUE(e["pool_state"]["hazard"].is_number()) << e.dump(2);
    EXPECT_FALSE(e.value("text", "").empty()) << e.dump(2);
  }

  void Cancel(std::int64_t id) {
    EXPECT_EQ(sched_->Call("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", user_).status,
              200);
    EXPECT_TRUE(WaitFor([&] { return Job(id)["state"] == "cancelled"; }, std::chrono::seconds(60)))
        << Job(id).dump(2);
  }

  // Submits a 1-GPU job, waits for it to run and returns the pool its attempt runs on.
  // Each refit is a new model whose tables are solved afresh, and until they are the cycle
  // decides by the rules of decisions 0014/0015; so the job goes in just after a refit, once
  // the new model's table gives the verdict `want`, well before the next refit.
  std::string RunsOn(const std::vector<std::string>& want, std::int64_t* id_out) {
    const json before = Availability()["fitted_at"];
    EXPECT_TRUE(WaitFor([&] { return Availability()["fitted_at"] != before; },
                        std::chrono::seconds(90)));
    std::string last;
    EXPECT_FALSE(WaitForQuote(want, &last).is_null()) << last;
    const std::int64_t id = Submit();
    *id_out = id;
    std::string pool;
    EXPECT_TRUE(WaitFor([&] {
      json w = Why(id);
      if (w.value("state", "") != "running" || !w["last_attempt"].is_object()) return false;
      pool = w["last_attempt"].value("pool", "");
      return !pool.empty();
    }, std::chrono::seconds(90))) << Job(id).dump(2) << Why(id).dump(2);
    return pool;
  }

  TempDir dir_{"frugal-learned-spot"};
  std::string calm_, stormy_;
  int calm_rows_ = 0, stormy_rows_ = 0;
  std::unique_ptr<SchedulerProcess> sched_;
  std::string user_;
};

TEST_F(LearnedSpotE2eTest, ModelAndDecisionsFollowTheImportedHistory) {
  // Both local workers join.
  ASSERT_TRUE(WaitFor([&] {
    auto n = sched_->Call("GET", "/v1/admin/nodes", sched_->admin_token());
    return n.status == 200 && n.raw.find("spot-1") != std::string::npos &&
           n.raw.find("od-1") != std::string::npos;
  }, std::chrono::seconds(60))) << sched_->process().Stderr();

  // 1. A calm history: the spot pool's up spells last 12 h, its outages one tick.
  Import(calm_);
  json calm = Availability();
  ASSERT_TRUE(calm["fitted_at"].is_string()) << calm.dump(2);
  EXPECT_NEAR(calm["imported_ticks"].get<double>(), calm_rows_, 1) << calm.dump(2);
  EXPECT_NE(calm["imported_source"].get<std::string>().find("calm.csv"), std::string::npos);
  ASSERT_FALSE(calm["bins"].empty()) << calm.dump(2);
  // The background refit runs again and adds what it observed of the live spot node.
  json refit;
  EXPECT_TRUE(WaitFor([&] {
    refit = Availability();
    // (observed_ticks stays 0 while the node has lived less than a 180 s tick)
    return refit["fitted_at"] != calm["fitted_at"] && refit["observed_ticks"].is_number();
  }, std::chrono::seconds(60))) << refit.dump(2) << calm.dump(2);
  EXPECT_EQ(refit["imported_ticks"], calm["imported_ticks"]);

  // The controller prices the spot pool and goes for it (or waits for it: never on-demand).
  std::string last;
  json quoted = WaitForQuote({"spot", "wait"}, &last);
  ASSERT_FALSE(quoted.is_null()) << "no spot/wait verdict under the calm history; last quote:\n"
                                 << last << "\n" << sched_->process().Stderr();
  ExpectPriced(quoted);
  // A job runs where the controller said: on the spot node (the pool is up, so a "wait"
  // verdict cannot last; spot or nothing).
  std::int64_t job1 = 0;
  EXPECT_EQ(RunsOn({"spot", "wait"}, &job1), "spot") << sched_->process().Stderr();
  // `frugal why` of a job that cannot start yet (it waits for job1) shows the options.
  const std::int64_t probe1 = Submit(job1);
  json why1;
  json opt1 = WhyOptions(probe1, {"spot", "wait"}, &why1);
  ASSERT_FALSE(opt1.is_null()) << why1.dump(2);
  ExpectPriced(opt1);
  ASSERT_TRUE(why1["on_demand"].is_object()) << why1.dump(2);
  EXPECT_EQ(why1["on_demand"]["pool"], "od") << why1.dump(2);
  auto text1 = Frugal({"why", std::to_string(probe1)}, user_);
  EXPECT_NE(text1.out.find("Options, priced by the learned spot model:"), std::string::npos)
      << Show(text1);
  EXPECT_NE(text1.out.find("on-demand od: $"), std::string::npos) << Show(text1);
  auto dry1 = Frugal({"submit", "--dry-run", "--gpus", "1", "--estimate", "1h", "--deadline",
                      "+4h", "--tolerance", "checkpointed", "--checkpoint-interval", "45m", "--",
                      "sleep", "600"},
                     user_);
  EXPECT_NE(dry1.out.find("Learned spot model:"), std::string::npos) << Show(dry1);
  Cancel(probe1);
  Cancel(job1);

  // 2. A stormy history: up for at most 30 minutes, then out. The model changes...
  Import(stormy_);
  json stormy = Availability();
  ASSERT_TRUE(stormy["fitted_at"].is_string()) << stormy.dump(2);
  EXPECT_NE(stormy["fitted_at"], refit["fitted_at"]) << stormy.dump(2);
  EXPECT_NE(stormy["imported_source"].get<std::string>().find("stormy.csv"), std::string::npos);
  ASSERT_EQ(stormy["bins"].size(), calm["bins"].size()) << stormy.dump(2);
  EXPECT_NEAR(stormy["imported_ticks"].get<double>(), stormy_rows_, 1) << stormy.dump(2);
  // ... up spells now end within half an hour: the up hazards rise.
  double calm_up = 0, stormy_up = 0;
  for (size_t b = 0; b < calm["bins"].size(); ++b) {
    calm_up += calm["bins"][b]["up_hazard"].get<double>();
    stormy_up += stormy["bins"][b]["up_hazard"].get<double>();
  }
  EXPECT_GT(stormy["bins"][0]["up_hazard"].get<double>(),
            calm["bins"][0]["up_hazard"].get<double>())
      << calm.dump(2) << stormy.dump(2);
  EXPECT_GT(stormy_up, calm_up) << calm.dump(2) << stormy.dump(2);

  // ... and so does the decision: on-demand.
  json od_quoted = WaitForQuote({"on-demand"}, &last);
  ASSERT_FALSE(od_quoted.is_null()) << "no on-demand verdict under the stormy history; last "
                                       "quote:\n"
                                    << last << "\n" << sched_->process().Stderr();
  ExpectPriced(od_quoted);
  EXPECT_GT(od_quoted["pool_state"]["hazard"].get<double>(),
            quoted["pool_state"]["hazard"].get<double>())
      << quoted.dump(2) << od_quoted.dump(2);
  std::int64_t job2 = 0;
  EXPECT_EQ(RunsOn({"on-demand"}, &job2), "od") << sched_->process().Stderr();
  const std::int64_t probe2 = Submit(job2);
  json why2;
  json opt2 = WhyOptions(probe2, {"on-demand"}, &why2);
  ASSERT_FALSE(opt2.is_null()) << why2.dump(2);
  ExpectPriced(opt2);
  EXPECT_EQ(why2["on_demand"]["pool"], "od") << why2.dump(2);
  Cancel(probe2);
  Cancel(job2);
}

}  // namespace
}  // namespace frugal::testing
