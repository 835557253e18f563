#include "common/clock.h"

#include <gtest/gtest.h>

namespace frugal {
namespace {

TEST(ClockTest, Rfc3339RoundTripsWithMicroseconds) {
  auto t = ParseRfc3339("2026-11-22T18:16:10.123456Z");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-22T18:16:10.123456Z");
}

TEST(ClockTest, Rfc3339OffsetIsConvertedToUtc) {
  // 20:00 at +02:00 is 18:00 UTC.
  auto t = ParseRfc3339("2026-11-22T20:00:00+02:00");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FormatRfc3339(*t), "2026-11-22T18:00:00Z");
}

TEST(ClockTest, Rfc3339RejectsMalformedTimes) {
  for (const char* bad : {"", "2026-11-22", "2026-13-01T00:00:00Z", "2026-11-22T18:00:00",
                          "2026-11-22T18:00:00Zjunk", "tomorrow", "2026-11-22T25:00:00Z"}) {
    EXPECT_FALSE(ParseRfc3339(bad).ok()) << bad;
  }
}

TEST(ClockTest, ParsesHumanDurations) {
  EXPECT_EQ(ParseDuration("90")->count(), 90);
  EXPECT_EQ(ParseDuration("15m")->count(), 900);
  // 2h30m = 7200 + 1800.
  EXPECT_EQ(ParseDuration("2h30m")->count(), 9000);
  EXPECT_EQ(ParseDuration("1d12h")->count(), 129600);
  EXPECT_FALSE(ParseDuration("0").ok());
  EXPECT_TRUE(ParseDuration("0", true).ok());
  for (const char* bad : {"", "h", "2x", "-5m", "2h30", "1.5h", "99999999999d"}) {
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
  }
}

TEST(ClockTest, FormatsDurationsCompactly) {
  EXPECT_EQ(FormatDuration(Seconds(9000)), "2h30m");
  EXPECT_EQ(FormatDuration(Seconds(0)), "0s");
  EXPECT_EQ(FormatDuration(Seconds(86401)), "1d1s");
}

TEST(ClockTest, FakeClockMovesOnlyWhenTold) {
  FakeClock clock(Timestamp(Seconds(1000)));
  EXPECT_EQ(clock.Now(), Timestamp(Seconds(1000)));
  clock.Advance(std::chrono::seconds(5));
  EXPECT_EQ(clock.Now(), Timestamp(Seconds(1005)));
}

}  // namespace
}  // namespace frugal

namespace frugal {
namespace {

// Found by tests/fuzz/job_submit_fuzz: a deadline in year 1041 overflowed the nanosecond
// count (UBSan: signed integer overflow) instead of being refused.
TEST(ClockTest, Rfc3339RefusesYearsATimestampCannotHold) {
  for (const char* far : {"1041-02-01T12:00:00Z", "1677-01-01T00:00:00Z", "2262-04-12T00:00:00Z",
                          "9999-12-31T23:59:59Z"}) {
    auto t = ParseRfc3339(far);
    ASSERT_FALSE(t.ok()) << far;
    EXPECT_NE(t.status().message().find("outside the years"), std::string::npos);
  }
  EXPECT_TRUE(ParseRfc3339("1700-01-01T00:00:00Z").ok());
  EXPECT_TRUE(ParseRfc3339("2261-12-31T23:59:59Z").ok());
}

TEST(ClockTest, Rfc3339RefusesDaysAndOffsetsThatDoNotExist) {
  EXPECT_FALSE(ParseRfc3339("2099-02-31T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2026-04-31T00:00:00Z").ok());
  EXPECT_FALSE(ParseRfc3339("2027-02-29T00:00:00Z").ok());
  EXPECT_TRUE(ParseRfc3339("2028-02-29T00:00:00Z").ok());  // leap year
  EXPECT_FALSE(ParseRfc3339("2026-11-22T18:00:00+99:99").ok());
  EXPECT_FALSE(ParseRfc3339("2026-11-22T18:00:00+01:60").ok());
  EXPECT_TRUE(ParseRfc3339("2026-11-22T18:00:00+23:59").ok());
}

}  // namespace
}  // namespace frugal
