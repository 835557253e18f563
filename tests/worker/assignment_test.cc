// The worker's decoding of an assignment from a heartbeat reply (worker/agent.h).
#include <gtest/gtest.h>

#include "worker/agent.h"

namespace frugal::worker {
namespace {

using nlohmann::json;

// Found by tests/fuzz/worker_assignment_fuzz: a float out of int's range in an integer field
// reached get<int>() (undefined behaviour) instead of being refused.
TEST(AssignmentTest, NumbersThatAreNotWholeAreRefused) {
  json a = {{"attempt_id", 7}, {"job_id", 3}, {"attempt", 1.1e83}, {"gpus", 1},
            {"command", {"true"}}, {"fence", std::string(64, 'a')}};
  auto parsed = ParseStartOrder(a);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("attempt must be a whole number"), std::string::npos)
      << parsed.status().message();
  a["attempt"] = 1;
  EXPECT_TRUE(ParseStartOrder(a).ok());
  a["max_runtime_seconds"] = 0.5;
  EXPECT_FALSE(ParseStartOrder(a).ok());
}

}  // namespace
}  // namespace frugal::worker
