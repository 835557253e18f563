// The worker's per-attempt GPU samples for the idle and right-sizing guardrails: pure.
#include "worker/gpu_probe.h"

#include <gtest/gtest.h>

namespace frugal::worker {
namespace {

TEST(AttemptUsageTest, BusiestGpuOfTheAttemptAndUnknownStaysUnknown) {
  const nlohmann::json gpus = {{{"index", 0}, {"utilization", 3}, {"memory_used_mb", 1000}},
                               {{"index", 1}, {"utilization", 40}, {"memory_used_mb", 900}},
                               {{"index", 2}, {"memory_used_mb", 500}}};
  auto u = AttemptUsageJson(gpus, {{10, {0, 1}}, {11, {2}}, {12, {}}});
  ASSERT_EQ(u.size(), 3u);
  EXPECT_EQ(u[0]["utilization"], 40);
  EXPECT_EQ(u[0]["memory_used_mb"], 1000);
  EXPECT_FALSE(u[1].contains("utilization"));  // [N/A]: unknown, never idle
  EXPECT_EQ(u[1]["memory_used_mb"], 500);
  EXPECT_FALSE(u[2].contains("utilization"));  // no GPUs known: unknown
  EXPECT_TRUE(AttemptUsageJson(nlohmann::json::array(), {{10, {0}}})[0].size() == 1);
}

}  // namespace
}  // namespace frugal::worker
