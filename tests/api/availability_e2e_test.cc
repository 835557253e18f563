// A spot pool's availability history end to end (decision 0023): the real `frugal` binary
// imports an excerpt of a shared trace into a real scheduler, reads the learned model back,
// and the import route refuses what it cannot use with a 4xx naming what to fix.
#include <gtest/gtest.h>

#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

// 45 probes of us-east-1a (195 s apart) and 5 of us-east-1c, cut from
// /work/shared/traces/spot_aws_v100_2023-02.csv.
const std::string kFixture =
    std::string(FRUGAL_SOURCE_DIR) + "/tests/testdata/spot_v100_us_east_1a_excerpt.csv";

std::string Show(const CommandResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

class AvailabilityE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sched_ = std::make_unique<SchedulerProcess>();
    for (const char* kind : {"spot", "on_demand"}) {
      auto r = Frugal({"admin", "pool", "set", kind == std::string("spot") ? "spot" : "od",
                       "--kind", kind, "--gpu-type", "a100", "--gpu-mem", "80", "--max-gpus", "8",
                       "--price", "1.20"});
      ASSERT_EQ(r.exit_code, 0) << Show(r);
    }
  }

  CommandResult Frugal(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, sched_->CliEnv(sched_->admin_token()));
  }
  HttpResult Import(const std::string& pool, const json& body, const std::string& token = "") {
    return sched_->Call("POST", "/v1/admin/pools/" + pool + "/availability/history",
                        token.empty() ? sched_->admin_token() : token, body.dump());
  }

  std::unique_ptr<SchedulerProcess> sched_;
};

TEST_F(AvailabilityE2eTest, ImportsATraceExcerptAndReadsTheModelBack) {
  // a. Two zones in the file: the CLI asks which one.
  auto which = Frugal({"admin", "pool", "history", "import", "spot", kFixture});
  EXPECT_EQ(which.exit_code, 1) << Show(which);
  EXPECT_NE(which.err.find("us-east-1a, us-east-1c"), std::string::npos) << Show(which);
  EXPECT_NE(which.err.find("--zone"), std::string::npos) << Show(which);
  // b. us-east-1a: spells of 2, 5, 3, 14, 3, 11, 3, 3 ticks (each ended) and 5 (going on),
  // 49 ticks of 180 s in all. The pool has no node and no stockout: nothing says it is
  // down, so it is assumed up (decision 0023).
  auto imported = Frugal({"admin", "pool", "history", "import", "spot", kFixture, "--zone",
                          "us-east-1a"});
  ASSERT_EQ(imported.exit_code, 0) << Show(imported);
  EXPECT_NE(imported.out.find("Pool spot: assumed up"), std::string::npos) << imported.out;
  EXPECT_NE(imported.out.find("0 ticks observed, 49 imported"), std::string::npos) << imported.out;
  // c. Read back as JSON.
  auto shown = Frugal({"admin", "pool", "availability", "spot", "-o", "json"});
  ASSERT_EQ(shown.exit_code, 0) << Show(shown);
  auto a = json::parse(shown.out);
  EXPECT_EQ(a["imported_ticks"], 49) << shown.out;
  EXPECT_EQ(a["observed_ticks"], 0) << shown.out;
  EXPECT_EQ(a["up"], true) << shown.out;
  EXPECT_EQ(a["assumed"], true) << shown.out;
  EXPECT_TRUE(a["fitted_at"].is_string()) << shown.out;
  EXPECT_NE(a["imported_source"].get<std::string>().find(
                "spot_v100_us_east_1a_excerpt.csv zone us-east-1a"),
            std::string::npos)
      << shown.out;
  ASSERT_EQ(a["bins"].size(), 8u) << shown.out;
  for (const auto& b : a["bins"]) {
    EXPECT_GT(b["up_hazard"].get<double>(), 0) << b;
    EXPECT_LT(b["up_hazard"].get<double>(), 1) << b;
  }
  // Down spells of 2-3 ticks all ended by age 2 (bin 1, ages 1-2): that bin's down hazard
  // is high (4 ends in 8 ticks, with the prior's pseudo-counts), far above bin 0's.
  EXPECT_GT(a["bins"][1]["down_hazard"].get<double>(), a["bins"][0]["down_hazard"].get<double>())
      << shown.out;
  // d. Audited.
  auto audit = sched_->Call("GET", "/v1/admin/audit?action=pool.availability_import",
                            sched_->admin_token());
  ASSERT_EQ(audit.body["entries"].size(), 1u) << audit.raw;
  EXPECT_EQ(audit.body["entries"][0]["subject"], "pool/spot") << audit.raw;
}

TEST_F(AvailabilityE2eTest, ImportRefusesWhatItCannotUse) {
  const json good = {{"csv", "elapsed_s,available\n0,1\n180,0\n"}};
  // Malformed CSV: 400 naming the line and the field.
  auto bad = Import("spot", {{"csv", "elapsed_s,available\n0,1\n180,x\n"}});
  EXPECT_EQ(bad.status, 400) << bad.raw;
  EXPECT_EQ(bad.body["error"]["field"], "csv") << bad.raw;
  EXPECT_NE(bad.body["error"]["message"].get<std::string>().find("line 3"), std::string::npos)
      << bad.raw;
  // No rows.
  auto empty = Import("spot", {{"csv", "elapsed_s,available\n"}});
  EXPECT_EQ(empty.status, 400) << empty.raw;
  // An unknown column.
  EXPECT_EQ(Import("spot", {{"csv", good["csv"]}, {"column", "created"}}).status, 400);
  // Unknown pool: 404; on-demand pool: 422 naming the pool.
  EXPECT_EQ(Import("nope", good).status, 404);
  auto od = Import("od", good);
  EXPECT_EQ(od.status, 422) << od.raw;
  EXPECT_NE(od.body["error"]["message"].get<std::string>().find("not a spot pool"),
            std::string::npos)
      << od.raw;
  EXPECT_EQ(sched_->Call("GET", "/v1/admin/pools/od/availability", sched_->admin_token()).status,
            422);
  // Not an admin: 403, and nothing imported.
  const std::string researcher = sched_->NewToken("avail", "ann");
  EXPECT_EQ(Import("spot", good, researcher).status, 403);
  EXPECT_EQ(sched_->Call("GET", "/v1/admin/pools/spot/availability", researcher).status, 403);
  auto a = sched_->Call("GET", "/v1/admin/pools/spot/availability", sched_->admin_token());
  ASSERT_EQ(a.status, 200) << a.raw;
  EXPECT_EQ(a.body["imported_ticks"], 0) << a.raw;
  // And a good one goes through: 1 tick up (ended), 1 down (going on).
  auto ok = Import("spot", good);
  EXPECT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(ok.body["imported_ticks"], 2) << ok.raw;
}

}  // namespace
}  // namespace frugal::testing
