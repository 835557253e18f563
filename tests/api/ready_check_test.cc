// ReadyCheck and Lane: the bounded waits behind /readyz and handler admission (decision
// 0018), with a fake ping the test releases by hand. No network, no database.
#include "api/ready_check.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>

#include "api/handler_lanes.h"

namespace frugal::api {
namespace {

using std::chrono::milliseconds;

// A ping that blocks until released, counting how many ran at once.
struct GatedPing {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  std::atomic<int> running{0}, most{0}, calls{0};

  Status operator()() {
    ++calls;
    most = std::max(most.load(), ++running);
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return open; });
    --running;
    return Status::Ok();
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

TEST(ReadyCheckTest, AnswersThePingResult) {
  ReadyCheck check([] { return Unavailable("down"); }, milliseconds(2000));
  EXPECT_EQ(check.Check().code(), StatusCode::kUnavailable);
  ReadyCheck up([] { return Status::Ok(); }, milliseconds(2000));
  EXPECT_TRUE(up.Check().ok());
}

TEST(ReadyCheckTest, AHungPingIsUnavailableAfterTheWaitAndNeverRunsTwiceAtOnce) {
  GatedPing ping;
  ReadyCheck check([&] { return ping(); }, milliseconds(50));
  // (a) Ten callers while the ping hangs: each gives up after its wait, with 503.
  std::vector<std::future<Status>> callers;
  for (int i = 0; i < 10; ++i) {
    callers.push_back(std::async(std::launch::async, [&] { return check.Check(); }));
  }
  for (auto& c : callers) EXPECT_EQ(c.get().code(), StatusCode::kUnavailable);
  // (b) Only one ping ever ran: the others waited for it.
  EXPECT_EQ(ping.most.load(), 1);
  EXPECT_EQ(ping.calls.load(), 1);
  // (c) Once it answers, the next caller gets a fresh ping's answer.
  ping.Open();
  Status st = Unavailable("not yet");
  for (int i = 0; i < 100 && !st.ok(); ++i) st = check.Check();
  EXPECT_TRUE(st.ok());
}

TEST(LaneTest, AFullLaneRefusesAfterItsWaitAndAdmitsOnceFree) {
  Lane lane("users", 2);
  ASSERT_TRUE(lane.Enter(milliseconds(10)).ok());
  ASSERT_TRUE(lane.Enter(milliseconds(10)).ok());
  Status full = lane.Enter(milliseconds(10));
  EXPECT_EQ(full.code(), StatusCode::kUnavailable);
  EXPECT_NE(full.message().find("users"), std::string::npos);
  lane.Leave();
  EXPECT_TRUE(lane.Enter(milliseconds(10)).ok());
}

TEST(LaneTest, HealthTakesNoLaneAndWorkersHaveTheirOwn) {
  HandlerLanes lanes(1, 1);
  EXPECT_EQ(lanes.For("/healthz"), nullptr);
  EXPECT_EQ(lanes.For("/readyz"), nullptr);
  EXPECT_EQ(lanes.For("/v1/workers/heartbeat"), &lanes.workers);
  EXPECT_EQ(lanes.For("/v1/jobs"), &lanes.users);
  // A full user lane leaves the worker lane free.
  ASSERT_TRUE(lanes.users.Enter(milliseconds(10)).ok());
  EXPECT_FALSE(lanes.users.Enter(milliseconds(10)).ok());
  EXPECT_TRUE(lanes.workers.Enter(milliseconds(10)).ok());
}

}  // namespace
}  // namespace frugal::api
