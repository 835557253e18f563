// Capacity figures tell the truth (issue 17), over real HTTP: quotes name only pools whose
// nodes hold the job, a job no node can hold is refused at submit until gangs span nodes,
// and reserved utilisation counts the GPUs that exist and are paid for (registered nodes or
// committed_gpus), not how far a pool may grow (max_gpus).
#include <gtest/gtest.h>

#include <chrono>

#include "common/clock.h"
#include "tests/testing/pool_fixture.h"
#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;

class CapacityE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    sched_ = std::make_unique<SchedulerProcess>();
    user_ = sched_->NewToken("vision", "alice");
    // 16 GPUs of reserved a100 allowed, but only one 2-GPU node exists.
    ASSERT_TRUE(CreatePool(*sched_, PoolBody("a100-reserved", "reserved", "4.40", 16)));
    const std::string worker = sched_->NewToken("infra", "workers", "worker");
    auto reg = sched_->Call("POST", "/v1/workers/register", worker,
                            R"({"node":"r-1","pool":"a100-reserved","gpus":2,"gpu_type":"a100","gpu_mem_gb":80})");
    ASSERT_EQ(reg.status, 200) << reg.raw;
  }
  HttpResult Admin(const std::string& method, const std::string& path, const json& body = nullptr) {
    return sched_->Call(method, path, sched_->admin_token(), body.is_null() ? "" : body.dump());
  }
  static std::string In(std::chrono::hours h) {
    return FormatRfc3339(std::chrono::time_point_cast<std::chrono::seconds>(
        std::chrono::system_clock::now() + h));
  }
  std::unique_ptr<SchedulerProcess> sched_;
  std::string user_;
};

TEST_F(CapacityE2eTest, QuotesAndSubmitsRespectNodeSizes) {
  const json fits = {{"command", {"train"}}, {"gpus", 2}, {"estimate_seconds", 3600}};
  auto ok = sched_->Call("POST", "/v1/jobs?dry_run=true", user_, fits.dump());
  ASSERT_EQ(ok.status, 200) << ok.raw;
  EXPECT_EQ(ok.body["quote"]["recommended_pool"], "a100-reserved") << ok.raw;
  // 4, 8 and 40 GPUs: the quote said "$4.40 on a100-reserved" for each; no node holds them.
  for (int gpus : {4, 8, 40}) {
    json big = fits;
    big["gpus"] = gpus;
    auto dry = sched_->Call("POST", "/v1/jobs?dry_run=true", user_, big.dump());
    ASSERT_EQ(dry.status, 200) << dry.raw;
    const json& q = dry.body["quote"];
    EXPECT_TRUE(q["recommended_pool"].is_null()) << gpus << ": " << q.dump();
    EXPECT_EQ(q["pools"][0]["allowed"], false) << q.dump();
    // 40 is over the pool's max_gpus as well, which is said first.
    EXPECT_EQ(q["pools"][0]["why_not"], gpus > 16 ? "holds at most 16 GPU(s)" : "nodes have 2 GPU(s)")
        << q.dump();
    auto submit = sched_->Call("POST", "/v1/jobs", user_, big.dump());
    EXPECT_EQ(submit.status, 422) << submit.raw;
    EXPECT_EQ(submit.body["error"]["field"], "gpus") << submit.raw;
    const std::string msg = submit.body["error"]["message"];
    EXPECT_NE(msg.find("no node can hold " + std::to_string(gpus) + " GPUs"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("2 GPUs (pool a100-reserved)"), std::string::npos) << msg;
  }
  EXPECT_EQ(sched_->Call("POST", "/v1/jobs", user_, fits.dump()).status, 201);
  // A pool whose nodes are not known yet may hold it: accepted, capacity permitting.
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("a100-od", "on_demand", "3.00", 64)));
  json big = fits;
  big["gpus"] = 8;
  auto later = sched_->Call("POST", "/v1/jobs", user_, big.dump());
  EXPECT_EQ(later.status, 201) << later.raw;
  EXPECT_EQ(later.body["expected_pool"], "a100-od") << later.raw;
}

TEST_F(CapacityE2eTest, ReservedPaidCapacityIsRegisteredNodesOrTheCommitment) {
  // An hour-long window in the future, after the pool was created: every paid GPU counts
  // the whole hour, so paid GPU-hours equal paid GPUs.
  const std::string window = "/v1/reports/cost?from=" + In(std::chrono::hours(1)) +
                             "&to=" + In(std::chrono::hours(2));
  auto paid_hours = [&] {
    auto r = Admin("GET", window);
    EXPECT_EQ(r.status, 200) << r.raw;
    for (const auto& p : r.body["pools"]) {
      if (p["pool"] == "a100-reserved") return p["paid_gpu_hours"].get<double>();
    }
    ADD_FAILURE() << r.raw;
    return -1.0;
  };
  auto overview_paid = [&] {
    auto r = sched_->Call("GET", "/v1/overview", user_);
    for (const auto& p : r.body["pools"]) {
      if (p["pool"] == "a100-reserved") return p["paid_gpus"].get<int>();
    }
    ADD_FAILURE() << r.raw;
    return -1;
  };
  EXPECT_NEAR(paid_hours(), 2.0, 1e-6) << "the registered node's 2 GPUs, not max_gpus 16";
  EXPECT_EQ(overview_paid(), 2);
  auto metrics = Admin("GET", "/metrics");
  EXPECT_NE(metrics.raw.find(
                "frugal_pool_paid_gpus{pool=\"a100-reserved\",capacity_kind=\"reserved\"} 2"),
            std::string::npos)
      << metrics.raw.substr(0, 4000);
  // A commitment of 6 GPUs is what is paid, whatever has registered.
  ASSERT_TRUE(CreatePool(*sched_, PoolBody("a100-reserved", "reserved", "4.40", 16,
                                           {{"committed_gpus", 6}})));
  EXPECT_NEAR(paid_hours(), 6.0, 1e-6);
  EXPECT_EQ(overview_paid(), 6);
  auto pools = Admin("GET", "/v1/admin/pools");
  ASSERT_EQ(pools.body["pools"].size(), 1u) << pools.raw;
  EXPECT_EQ(pools.body["pools"][0]["committed_gpus"], 6);
  EXPECT_EQ(pools.body["pools"][0]["max_gpus"], 16);
  EXPECT_EQ(pools.body["pools"][0]["live_gpus"], 2);
  // Only reserved capacity is paid for unused.
  auto spot = Admin("POST", "/v1/admin/pools",
                    PoolBody("a100-spot", "spot", "1.00", 16, {{"committed_gpus", 4}}));
  EXPECT_EQ(spot.status, 400) << spot.raw;
  EXPECT_EQ(spot.body["error"]["field"], "committed_gpus") << spot.raw;
}

}  // namespace
}  // namespace frugal::testing
