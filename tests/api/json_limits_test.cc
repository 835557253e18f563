#include "api/json_limits.h"

#include <gtest/gtest.h>

namespace frugal::api {
namespace {

TEST(JsonLimitsTest, AcceptsOrdinaryBodies) {
  EXPECT_TRUE(CheckJsonLimits(R"({"command":["a"],"env":{"K":"[[[{{{"}})").ok());
}

TEST(JsonLimitsTest, RejectsNestingBeyondTheLimit) {
  std::string ok(kMaxJsonDepth, '['), deep(kMaxJsonDepth + 1, '[');
  EXPECT_TRUE(CheckJsonLimits(ok).ok());
  Status st = CheckJsonLimits(deep);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST(JsonLimitsTest, BracketsInsideStringsDoNotCount) {
  std::string body = "{\"s\":\"" + std::string(100, '[') + "\\\"\"}";
  EXPECT_TRUE(CheckJsonLimits(body).ok());
}

TEST(JsonLimitsTest, RejectsBodiesOverOneMebibyte) {
  std::string big(kMaxBodyBytes + 1, ' ');
  EXPECT_EQ(CheckJsonLimits(big).code(), StatusCode::kPayloadTooLarge);
}

}  // namespace
}  // namespace frugal::api
