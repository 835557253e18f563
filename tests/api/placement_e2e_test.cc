// Placement advice over real HTTP: submit --dry-run quotes without submitting, a deadline no
// safe pool can meet is refused with the earliest feasible finish, and `why` explains a
// waiting job with its priority factors; the CLI prints the same.
#include <gtest/gtest.h>

#include <thread>

#include "common/clock.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

class PlacementE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sched_ = new SchedulerProcess();
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("od", "on_demand", "3.00", 16)));
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("spot", "spot", "1.00", 16)));
    user_ = new std::string(sched_->NewToken("vision", "alice"));
  }
  static void TearDownTestSuite() {
    delete sched_;
    delete user_;
  }
  static int JobCount() {
    return static_cast<int>(sched_->Call("GET", "/v1/jobs", *user_).body["jobs"].size());
  }
  static SchedulerProcess* sched_;
  static std::string* user_;
};

SchedulerProcess* PlacementE2eTest::sched_ = nullptr;
std::string* PlacementE2eTest::user_ = nullptr;

TEST_F(PlacementE2eTest, DryRunQuotesEveryPoolAndSubmitsNothing) {
  const int before = JobCount();
  json body = {{"command", {"python", "train.py"}}, {"gpus", 2}, {"estimate_seconds", 7200},
               {"gpu_types", {"a100"}},
               {"tolerance", "checkpointed"}, {"checkpoint_interval_seconds", 600}};
  auto r = sched_->Call("POST", "/v1/jobs?dry_run=true", *user_, body.dump());
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["dry_run"], true);
  const json& q = r.body["quote"];
  ASSERT_GE(q["pools"].size(), 2u);  // another test may add a T4 pool, not allowed here
  for (const auto& p : q["pools"]) {
    EXPECT_EQ(p["allowed"].get<bool>(), p["gpu_type"] == "a100") << p.dump();
  }
  // 2 GPUs x 2 h on demand at $3.00 = $12.00, the comparison every quote carries.
  EXPECT_EQ(q["on_demand_pool"], "od");
  EXPECT_EQ(q["on_demand_cost"], "12.000000");
  EXPECT_EQ(q["recommended_pool"], "spot") << q.dump(2);
  EXPECT_FALSE(q["recommendation"].get<std::string>().empty());
  EXPECT_EQ(JobCount(), before);
  // A job that must never be interrupted cannot go to spot.
  body["tolerance"] = "none";
  auto none = sched_->Call("POST", "/v1/jobs?dry_run=true", *user_, body.dump());
  for (const auto& p : none.body["quote"]["pools"]) {
    if (p["pool"] == "spot") {
      EXPECT_FALSE(p["allowed"].get<bool>()) << p.dump();
    }
  }
  EXPECT_EQ(none.body["quote"]["recommended_pool"], "od");
  EXPECT_EQ(sched_->Call("POST", "/v1/jobs?dry_run=maybe", *user_, body.dump()).status, 400);
}

TEST_F(PlacementE2eTest, InfeasibleDeadlineIsRefusedWithTheEarliestFinish) {
  // T4s run at a quarter of the reference speed: 1 h of reference work takes 4 h there.
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("t4-od", "on_demand", "0.35", 8,
                                            {{"gpu_type", "t4"}, {"gpu_mem_gb", 16}, {"speed", 0.25}})));
  const int before = JobCount();
  auto in = [](std::chrono::hours h) {
    return frugal::FormatRfc3339(std::chrono::time_point_cast<std::chrono::seconds>(
        std::chrono::system_clock::now() + h));
  };
  json body = {{"command", {"python", "train.py"}}, {"gpu_types", {"t4"}},
               {"estimate_seconds", 3600}, {"deadline", in(std::chrono::hours(2))}};
  auto r = sched_->Call("POST", "/v1/jobs", *user_, body.dump());
  ASSERT_EQ(r.status, 422) << r.raw;
  EXPECT_EQ(r.body["error"]["field"], "deadline");
  const std::string msg = r.body["error"]["message"];
  EXPECT_NE(msg.find("earliest feasible finish"), std::string::npos) << msg;
  EXPECT_NE(msg.find(" on t4-od"), std::string::npos) << msg;
  EXPECT_EQ(JobCount(), before);
  // Less work than the deadline even at the reference speed: refused before any quote.
  body["estimate_seconds"] = 36000;
  auto codec = sched_->Call("POST", "/v1/jobs", *user_, body.dump());
  EXPECT_EQ(codec.status, 422) << codec.raw;
  EXPECT_NE(codec.raw.find("earliest feasible"), std::string::npos) << codec.raw;
  // With room to spare it is accepted.
  body["estimate_seconds"] = 3600;
  body["deadline"] = in(std::chrono::hours(24));
  EXPECT_EQ(sched_->Call("POST", "/v1/jobs", *user_, body.dump()).status, 201);
}

TEST_F(PlacementE2eTest, WhyExplainsAWaitingJob) {
  // No nodes are registered: the job waits, and says so. Beside it waits a 3-GPU job of its
  // class, the largest pending anywhere (others here take 1), so its factors are known:
  // just submitted (age ~0), no deadline (urgency 0), a team that used nothing (fair share
  // 1), size log2(1 + 1) / log2(1 + 3) = 0.5; score (0 + 1 + 0 + 0.5 x 0.5) / 4.5 = 0.28.
  auto big = sched_->Call("POST", "/v1/jobs", *user_,
                          json{{"command", {"true"}}, {"priority", "high"}, {"gpus", 3}}.dump());
  ASSERT_EQ(big.status, 201) << big.raw;
  auto sub = sched_->Call("POST", "/v1/jobs", *user_,
                          json{{"command", {"true"}}, {"priority", "high"}}.dump());
  ASSERT_EQ(sub.status, 201) << sub.raw;
  const std::string id = std::to_string(sub.body["id"].get<std::int64_t>());
  json why;
  for (int i = 0; i < 50; ++i) {  // the engine writes the reason on its next cycle
    why = sched_->Call("GET", "/v1/jobs/" + id + "/why", *user_).body;
    if (!why.value("reason", "").empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(why["state"], "pending");
  EXPECT_EQ(why["priority"], "high");
  // No node anywhere: no room, for its 1 GPU.
  EXPECT_NE(why["reason"].get<std::string>().find("waiting: no room for 1 GPU(s) in the pool(s)"),
            std::string::npos)
      << why.dump();
  ASSERT_TRUE(why["factors"].is_object()) << why.dump();
  const json& f = why["factors"];
  EXPECT_NEAR(f["age"].get<double>(), 0.0, 0.001) << why.dump();  // 86 s would be 0.001
  EXPECT_DOUBLE_EQ(f["fair_share"].get<double>(), 1.0) << why.dump();
  EXPECT_DOUBLE_EQ(f["urgency"].get<double>(), 0.0) << why.dump();
  EXPECT_DOUBLE_EQ(f["size"].get<double>(), 0.5) << why.dump();
  EXPECT_NEAR(f["score"].get<double>(), 1.25 / 4.5, 0.001) << why.dump();
  EXPECT_EQ(why["factors_text"],
            "score 0.28 = (age 0.00x1 + fair_share 1.00x1 + urgency 0.00x2 + size 0.50x0.5) / 4.5")
      << why.dump();
  // Nothing of a higher class waits; the 3-GPU job is the one other of its class.
  EXPECT_EQ(why["higher_priority_pending"], 0) << why.dump();
  EXPECT_EQ(why["same_priority_pending"], 1) << why.dump();
  auto cli = RunCommand({FRUGAL_CLI_BIN, "why", id}, sched_->CliEnv(*user_));
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("is pending (priority high)"), std::string::npos) << cli.out;
  // Another team's job is not theirs to explain.
  const std::string bob = sched_->NewToken("speech", "bob");
  EXPECT_EQ(sched_->Call("GET", "/v1/jobs/" + id + "/why", bob).status, 404);
  EXPECT_EQ(sched_->Call("GET", "/v1/jobs/" + id + "/why", "").status, 401);
}

}  // namespace
}  // namespace frugal::testing
