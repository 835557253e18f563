// The notice watcher's sources against a fake clock and a scripted metadata server: a
// notice stands while its source says so and is withdrawn when it stops (decision 0021).
#include "worker/notice_watcher.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/testing/temp_dir.h"

namespace frugal::worker {
namespace {

TEST(NoticeWatcherTest, FileNoticeStandsWhileTheFileExists) {
  testing::TempDir dir("frugal-notice");
  const std::string file = dir.path() + "/notice";
  FakeClock clock(Timestamp{});
  NoticeWatcher w({file, "", "aws"}, clock);
  EXPECT_FALSE(w.Check());
  std::ofstream(file) << "terminate\n";
  EXPECT_TRUE(w.Check());
  EXPECT_EQ(w.source(), "file " + file);
  std::filesystem::remove(file);
  EXPECT_FALSE(w.Check());
  EXPECT_EQ(w.source(), "");
}

TEST(NoticeWatcherTest, MetadataNoticeIsWithdrawnByA404AndKeptThroughFailedPolls) {
  FakeClock clock(Timestamp{});
  // The scripted server: the next answer, or no answer at all (unreachable).
  StatusOr<HttpText> next = HttpText{404, ""};
  int polls = 0;
  auto fetch = [&](const HttpRequest& r) -> StatusOr<HttpText> {
    if (r.method == "PUT") return HttpText{200, "token"};  // IMDSv2 token
    ++polls;
    return next;
  };
  NoticeOptions o;
  o.url = "http://169.254.169.254/latest/meta-data/spot/instance-action";
  o.poll_interval = std::chrono::milliseconds(5000);
  NoticeWatcher w(o, clock, fetch);
  const auto poll = [&] { clock.Advance(std::chrono::seconds(5)); return w.Check(); };
  EXPECT_FALSE(w.Check());
  // a. A notice: it stands between polls (no new request) ...
  next = HttpText{200, R"({"action":"terminate","time":"2026-11-26T01:00:00Z"})"};
  EXPECT_TRUE(poll());
  const int after_notice = polls;
  EXPECT_TRUE(w.Check());
  EXPECT_EQ(polls, after_notice);
  // b. ... and through a poll that gets no answer.
  next = Status(StatusCode::kUnavailable, "timed out");
  EXPECT_TRUE(poll());
  // c. 404 again: withdrawn.
  next = HttpText{404, ""};
  EXPECT_FALSE(poll());
  EXPECT_EQ(w.source(), "");
}

}  // namespace
}  // namespace frugal::worker
