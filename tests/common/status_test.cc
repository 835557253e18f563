#include "common/status.h"

#include <gtest/gtest.h>

namespace frugal {
namespace {

StatusOr<int> Half(int n) {
  if (n % 2 != 0) return InvalidArgument("odd", "n");
  return n / 2;
}

StatusOr<int> Quarter(int n) {
  ASSIGN_OR_RETURN(int h, Half(n));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(StatusTest, OkByDefault) {
  Status st;
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(st.ToString(), "ok");
}

TEST(StatusTest, CarriesCodeMessageAndField) {
  Status st = InvalidArgument("gpus must be positive", "gpus");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(st.field(), "gpus");
  EXPECT_EQ(st.ToString(), "invalid_argument: gpus must be positive (field gpus)");
}

TEST(StatusTest, AssignOrReturnPropagatesTheFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  // 6 / 2 = 3 is odd: the second Half fails.
  auto r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "n");
}

}  // namespace
}  // namespace frugal
