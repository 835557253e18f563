#include "common/money.h"

#include <gtest/gtest.h>

namespace frugal {
namespace {

TEST(MoneyTest, ParsesDollarsIntoIntegerMicros) {
  EXPECT_EQ(*ParseDollars("12.5"), 12'500'000);
  EXPECT_EQ(*ParseDollars("0.000001"), 1);
  EXPECT_EQ(*ParseDollars("3"), 3'000'000);
  EXPECT_EQ(*ParseDollars("-2.25", true), -2'250'000);
}

TEST(MoneyTest, RejectsWhatIsNotAnAmount) {
  for (const char* bad : {"", ".", "1.", "1e3", "abc", "1.0000001", "12,50"}) {
    EXPECT_FALSE(ParseDollars(bad).ok()) << bad;
  }
  EXPECT_FALSE(ParseDollars("-1").ok());  // negative only when allowed
}

TEST(MoneyTest, FormatsRoundedToCentsOrFull) {
  EXPECT_EQ(FormatDollars(12'345'678), "12.35");  // .345678 rounds up to .35
  EXPECT_EQ(FormatDollars(12'344'999), "12.34");
  EXPECT_EQ(FormatDollars(12'345'678, true), "12.345678");
  EXPECT_EQ(FormatDollars(-1'500'000), "-1.50");
}

}  // namespace
}  // namespace frugal
