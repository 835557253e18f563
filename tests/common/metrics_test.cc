#include "common/metrics.h"

#include <gtest/gtest.h>

#include <limits>
#include <thread>

#include "tests/api/prom_text.h"

namespace frugal::metrics {
namespace {

using testing::ParsePromText;

TEST(MetricsTest, RendersCountersAndGaugesWithHelpAndType) {
  Registry r;
  r.Counter("demo_jobs_total", "Jobs.", {"team"}).Inc({"vision"}, 3);
  r.Gauge("demo_up", "Up.").Set({}, 1);
  EXPECT_EQ(r.Render(),
            "# HELP demo_jobs_total Jobs.\n# TYPE demo_jobs_total counter\n"
            "demo_jobs_total{team=\"vision\"} 3\n"
            "# HELP demo_up Up.\n# TYPE demo_up gauge\ndemo_up 1\n");
}

TEST(MetricsTest, UnlabelledFamilyShowsZeroBeforeFirstUpdate) {
  Registry r;
  r.Counter("demo_total", "Nothing yet.");
  r.Counter("demo_labelled_total", "Nothing yet.", {"pool"});
  // The unlabelled one has its 0 sample; the labelled one has no label set to show.
  EXPECT_EQ(r.Render(),
            "# HELP demo_labelled_total Nothing yet.\n# TYPE demo_labelled_total counter\n"
            "# HELP demo_total Nothing yet.\n# TYPE demo_total counter\ndemo_total 0\n");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeAndInfEqualsCount) {
  Registry r;
  auto& h = r.Histogram("demo_seconds", "Durations.", {"route"}, {0.25, 1});
  // 0.125 -> le 0.25; 0.25 -> le 0.25 (bounds are inclusive); 0.5 -> le 1; 7 -> +Inf only.
  // Sum 0.125 + 0.25 + 0.5 + 7 = 7.875 (exact in binary).
  for (double v : {0.125, 0.25, 0.5, 7.0}) h.Observe({"/x"}, v);
  EXPECT_EQ(r.Render(),
            "# HELP demo_seconds Durations.\n# TYPE demo_seconds histogram\n"
            "demo_seconds_bucket{route=\"/x\",le=\"0.25\"} 2\n"
            "demo_seconds_bucket{route=\"/x\",le=\"1\"} 3\n"
            "demo_seconds_bucket{route=\"/x\",le=\"+Inf\"} 4\n"
            "demo_seconds_sum{route=\"/x\"} 7.875\n"
            "demo_seconds_count{route=\"/x\"} 4\n");
  EXPECT_TRUE(ParsePromText(r.Render()).ok());
}

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  Registry r;
  r.Gauge("demo_g", "Back\\slash\nnewline.", {"v"}).Set({"a\"b\\c\nd"}, 1);
  const std::string text = r.Render();
  EXPECT_NE(text.find("# HELP demo_g Back\\\\slash\\nnewline.\n"), std::string::npos) << text;
  EXPECT_NE(text.find("demo_g{v=\"a\\\"b\\\\c\\nd\"} 1\n"), std::string::npos) << text;
  auto parsed = ParsePromText(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->families.at("demo_g").samples[0].labels.at("v"), "a\"b\\c\nd");
}

TEST(MetricsTest, CounterRefusesToGoDown) {
  Registry r;
  auto& c = r.Counter("demo_total", "x");
  c.Inc({}, 2);
  c.Inc({}, -1);
  EXPECT_NE(r.Render().find("demo_total 2\n"), std::string::npos);
}

TEST(MetricsTest, AddingANameTwiceReturnsTheSameFamily) {
  Registry r;
  r.Counter("demo_total", "x", {"a"}).Inc({"1"});
  r.Counter("demo_total", "x", {"a"}).Inc({"1"});
  EXPECT_NE(r.Render().find("demo_total{a=\"1\"} 2\n"), std::string::npos);
}

TEST(MetricsTest, FormatsSpecialValues) {
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(FormatValue(inf), "+Inf");
  EXPECT_EQ(FormatValue(-inf), "-Inf");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatValue(0.25), "0.25");
  EXPECT_EQ(FormatValue(12), "12");
}

TEST(MetricsTest, ConcurrentUpdatesAreAllCounted) {
  Registry r;
  auto& c = r.Counter("demo_total", "x", {"t"});
  auto& h = r.Histogram("demo_seconds", "x", {}, LatencyBuckets());
  std::vector<std::thread> threads;
  // 4 threads x 10000 increments = 40000, and as many observations.
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        c.Inc({"a"});
        h.Observe({}, 0.001);
      }
    });
  }
  for (auto& t : threads) t.join();
  auto parsed = ParsePromText(r.Render());
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->Sum("demo_total"), 40000);
  EXPECT_EQ(parsed->Sum("demo_seconds_count"), 40000);
}

TEST(PromTextTest, RefusesMalformedExpositions) {
  const char* bad[] = {
      "demo 1\n",                                                       // no TYPE
      "# TYPE demo gauge\n# HELP demo x\ndemo{a=\"1\"} 1\ndemo{a=\"1\"} 2\n",  // duplicate
      "# TYPE demo gauge\n# HELP demo x\ndemo{a=\"\\t\"} 1\n",         // bad escape
      "# TYPE demo gauge\n# HELP demo x\ndemo 1",                       // no final newline
      "# TYPE demo counter\n# HELP demo x\ndemo -1\n",                  // counter down
      "# TYPE a gauge\n# HELP a x\na 1\n# TYPE b gauge\n# HELP b x\nb 1\na 2\n",  // split
      "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
      "h_sum 1\nh_count 1\n",                                           // buckets go down
      "# TYPE h histogram\n# HELP h x\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 3\n",
  };
  for (const char* text : bad) EXPECT_FALSE(ParsePromText(text).ok()) << text;
}

}  // namespace
}  // namespace frugal::metrics
