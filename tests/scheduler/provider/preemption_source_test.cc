#include "scheduler/provider/preemption_source.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/testing/temp_dir.h"

namespace frugal::provider {
namespace {

TEST(RatePreemptionsTest, FirstCallOnlyStartsTheClock) {
  RatePreemptions r(1e6, 7);  // so fast that any interval would hold a notice
  EXPECT_EQ(r.Due(100.0, 4), 0);
  EXPECT_GT(r.Due(101.0, 4), 0);
}

TEST(RatePreemptionsTest, LongRunAverageMatchesTheRate) {
  // 2 notices per node-hour, 5 nodes, 1000 h in 10 s steps: expect 10,000 notices.
  RatePreemptions r(2.0, 42);
  long total = 0;
  for (int step = 0; step <= 360000; ++step) total += r.Due(step * 10.0, 5);
  EXPECT_NEAR(static_cast<double>(total), 10000.0, 300.0);  // ~3 sigma of Poisson(10000)
}

TEST(RatePreemptionsTest, SameSeedSameNotices) {
  RatePreemptions a(30.0, 3), b(30.0, 3), c(30.0, 4);
  std::vector<int> sa, sb, sc;
  for (int s = 0; s < 2000; ++s) {
    sa.push_back(a.Due(s, 3));
    sb.push_back(b.Due(s, 3));
    sc.push_back(c.Due(s, 3));
  }
  EXPECT_EQ(sa, sb);
  EXPECT_NE(sa, sc);
}

TEST(RatePreemptionsTest, NoLiveNodesNoNotices) {
  RatePreemptions r(1e6, 1);
  r.Due(0, 0);
  EXPECT_EQ(r.Due(10, 0), 0);
  EXPECT_LE(r.Due(20, 2), 2);  // never more notices than live nodes
}

class TraceAvailabilityTest : public ::testing::Test {
 protected:
  std::string Write(const std::string& text) {
    const std::string path = dir_.path() + "/trace.csv";
    std::ofstream(path) << text;
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(TraceAvailabilityTest, BinarySeriesAllowsAllOrNoneAndRepeats) {
  auto t = TraceAvailability::Load(Write("zone,tick,elapsed_s,timestamp_utc,available,spot_usd_hr\n"
                                         "a,0,0,,1,0.9\nb,0,0,,0,0.9\na,1,60,,0,0.9\n"
                                         "a,2,120,,1,0.9\n"),
                                   "a");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->ticks(), 3u);
  EXPECT_DOUBLE_EQ(t->span_s(), 180.0);  // last tick + one 60 s gap
  EXPECT_EQ(t->Allowed(0, 4), 4);
  EXPECT_EQ(t->Allowed(59.9, 4), 4);
  EXPECT_EQ(t->Allowed(60, 4), 0);
  EXPECT_EQ(t->Allowed(150, 4), 4);
  EXPECT_EQ(t->Allowed(180 + 70, 4), 0);  // second lap: t = 70 again
}

TEST_F(TraceAvailabilityTest, CountSeriesScalesToThePoolsNodes) {
  // Counts out of 4 instances; a pool of 2 nodes gets floor(2 * count / 4).
  auto t = TraceAvailability::Load(Write("zone,tick,elapsed_s,timestamp_utc,available\n"
                                         "z,0,0,,4\nz,1,300,,3\nz,2,600,,1\n"),
                                   "z");
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->Allowed(0, 2), 2);
  EXPECT_EQ(t->Allowed(300, 2), 1);
  EXPECT_EQ(t->Allowed(600, 2), 0);
  EXPECT_EQ(t->Allowed(600, 8), 2);
}

TEST_F(TraceAvailabilityTest, MissingZoneFileOrColumnsAreClearErrors) {
  auto no_zone = TraceAvailability::Load(Write("zone,tick,elapsed_s,available\na,0,0,1\n"), "b");
  EXPECT_EQ(no_zone.status().code(), StatusCode::kNotFound);
  EXPECT_NE(no_zone.status().message().find("zone b"), std::string::npos);
  auto no_file = TraceAvailability::Load(dir_.path() + "/nope.csv", "a");
  EXPECT_EQ(no_file.status().code(), StatusCode::kNotFound);
  auto no_cols = TraceAvailability::Load(Write("zone,tick\na,0\n"), "a");
  EXPECT_EQ(no_cols.status().code(), StatusCode::kInvalidArgument);
  auto garbage = TraceAvailability::Load(Write("zone,elapsed_s,available\na,x,1\n"), "a");
  EXPECT_EQ(garbage.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace frugal::provider
