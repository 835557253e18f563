// The learned availability chain (model/availability.h): exact counts per age bin from
// spells and series, transitions that sum to one and fall back on the prior, the JSON form.
#include "scheduler/model/availability.h"

#include <gtest/gtest.h>

#include <cmath>

namespace frugal::model {
namespace {

TEST(AvailabilityModelTest, BinsGrowGeometrically) {
  auto m = AvailabilityModel::Empty(180, 8);
  EXPECT_EQ(m.bin_start, (std::vector<int>{0, 1, 3, 6, 10, 17, 27, 44}));
  EXPECT_EQ(m.State(true, 0), 0);
  EXPECT_EQ(m.State(true, 2), 1);
  EXPECT_EQ(m.State(true, 1000), 7);
  EXPECT_EQ(m.State(false, 4), 8 + 2);
}

// An up spell of 5 ticks that ended: ages 0 (bin 0, moves on), 1-2 (bin 1: stays, then moves
// on), 3-4 (bin 2: stays, then ends).
TEST(AvailabilityModelTest, AnEndedSpellCountsEachAgeOnce) {
  auto m = AvailabilityModel::Empty(180, 8);
  m.AddSpell(true, 5, /*ended=*/true);
  EXPECT_EQ(m.onward[0], 1);
  EXPECT_EQ(m.stay[0], 0);
  EXPECT_EQ(m.stay[1], 1);
  EXPECT_EQ(m.onward[1], 1);
  EXPECT_EQ(m.stay[2], 1);
  EXPECT_EQ(m.flip[2], 1);
  EXPECT_EQ(m.ObservedTicks(), 5);
  // Censored: the same ticks, no end.
  auto c = AvailabilityModel::Empty(180, 8);
  c.AddSpell(true, 5, /*ended=*/false);
  EXPECT_EQ(c.flip[2], 0);
  EXPECT_EQ(c.stay[2], 2);
}

TEST(AvailabilityModelTest, ASeriesIsItsSpellsWithTheLastOneCensored) {
  auto m = AvailabilityModel::Empty(180, 1);  // memoryless: one bin per side
  m.AddSeries({1, 1, 1, 0, 0, 1, 1});
  EXPECT_EQ(m.flip[0], 1);  // the up spell of 3 ended
  EXPECT_EQ(m.stay[0], 2 + 2);
  EXPECT_EQ(m.flip[1], 1);  // the down spell of 2 ended
  EXPECT_EQ(m.stay[1], 1);
  EXPECT_EQ(m.ObservedTicks(), 7);
}

TEST(AvailabilityModelTest, TransitionsSumToOneAndStartFromThePrior) {
  auto m = AvailabilityModel::Empty(180, 4);
  auto prior = PriorFor(180, /*reclaims_per_hour=*/0.5, /*outage_hours=*/2);
  EXPECT_NEAR(prior.up_end, 0.5 * 0.05, 1e-12);
  EXPECT_NEAR(prior.down_end, 0.05 / 2, 1e-12);
  auto next = m.Transitions(prior.prior_ticks, prior.up_end, prior.down_end);
  for (int s = 0; s < m.states(); ++s) {
    double sum = 0, ends = 0;
    for (const auto& n : next[s]) {
      sum += n.p;
      if (m.IsUp(n.state) != m.IsUp(s)) ends += n.p;
    }
    EXPECT_NEAR(sum, 1.0, 1e-9);
    EXPECT_NEAR(ends, m.IsUp(s) ? prior.up_end : prior.down_end, 1e-9) << s;
  }
  // Evidence moves it: up spells that all end after exactly 2 ticks.
  for (int i = 0; i < 1000; ++i) m.AddSpell(true, 2, true), m.AddSpell(false, 1, true);
  next = m.Transitions(prior.prior_ticks, prior.up_end, prior.down_end);
  double end_at_1 = 0;
  for (const auto& n : next[m.State(true, 1)]) end_at_1 += m.IsUp(n.state) ? 0 : n.p;
  EXPECT_GT(end_at_1, 0.4);  // bin 1 holds ages 1-2: half its ticks end a spell
}

TEST(AvailabilityModelTest, JsonRoundTripsAndRejectsMalformedText) {
  auto m = AvailabilityModel::Empty(600, 3);
  m.AddSeries({1, 0, 0, 1, 1, 1, 0});
  AvailabilityModel back;
  ASSERT_TRUE(AvailabilityFromJson(AvailabilityToJson(m), &back));
  EXPECT_EQ(back.tick_seconds, 600);
  EXPECT_EQ(back.bin_start, m.bin_start);
  EXPECT_EQ(back.stay, m.stay);
  EXPECT_EQ(back.flip, m.flip);
  EXPECT_FALSE(AvailabilityFromJson("{", &back));
  EXPECT_FALSE(AvailabilityFromJson(R"({"tick_seconds":0,"bin_start":[0],"stay":[0,0],"onward":[0,0],"flip":[0,0]})", &back));
  EXPECT_FALSE(AvailabilityFromJson(R"({"tick_seconds":60,"bin_start":[0],"stay":[0],"onward":[0,0],"flip":[0,0]})", &back));
}

}  // namespace
}  // namespace frugal::model
