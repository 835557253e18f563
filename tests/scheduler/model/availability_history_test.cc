// Spells from node lives and from trace CSVs, and how they become counts (decision 0023).
// Ticks are 180 s; bins start at ages 0, 1, 3, 6, 10, 17, 27 and 44 ticks.
#include "scheduler/model/availability_history.h"

#include <gtest/gtest.h>

namespace frugal::model {
namespace {

double Flips(const AvailabilityModel& m, bool up) {
  double f = 0;
  for (int s = 0; s < m.states(); ++s)
    if (m.IsUp(s) == up) f += m.flip[s];
  return f;
}

TEST(SpellsFromLivesTest, UnionIsUpGapsAreDownLastSpellGoesOn) {
  // Lives 0-600 and 300-900 overlap; 1500-2000 after a gap; now 2400.
  auto s = SpellsFromLives({{1500, 2000}, {0, 600}, {300, 900}}, 2400);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_TRUE(s[0].up);
  EXPECT_DOUBLE_EQ(s[0].end_s, 900);
  EXPECT_TRUE(s[0].ended);
  EXPECT_FALSE(s[1].up);
  EXPECT_DOUBLE_EQ(s[1].start_s, 900);
  EXPECT_DOUBLE_EQ(s[1].end_s, 1500);
  EXPECT_TRUE(s[2].up && s[2].ended);
  EXPECT_FALSE(s[3].up);
  EXPECT_FALSE(s[3].ended);  // still down now
  EXPECT_DOUBLE_EQ(s[3].end_s, 2400);
}

TEST(SpellsFromLivesTest, ALifeReachingNowIsAnUpSpellGoingOn) {
  auto s = SpellsFromLives({{0, 1000}}, 1000);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_TRUE(s[0].up);
  EXPECT_FALSE(s[0].ended);
  EXPECT_TRUE(SpellsFromLives({}, 1000).empty());
}

TEST(SpellsFromLivesTest, AGangOfTwoIsUpWhileTwoLivesOverlap) {
  // Lives 0-600 and 300-900 (taken), then 1200-2400 and 1500-2400 (live), now 2400.
  const std::vector<NodeLife> lives = {{0, 600}, {300, 900}, {1200, 2400}, {1500, 2400}};
  auto s = SpellsFromLives(lives, 2400, {}, 2);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].up && s[0].ended);  // 300-600: the first reclaim ends it
  EXPECT_DOUBLE_EQ(s[0].start_s, 300);
  EXPECT_DOUBLE_EQ(s[0].end_s, 600);
  EXPECT_FALSE(s[1].up);  // down until two are alive again
  EXPECT_DOUBLE_EQ(s[1].end_s, 1500);
  EXPECT_TRUE(s[2].up);
  EXPECT_FALSE(s[2].ended);
  // With one node the same lives are up 0-900 and from 1200: one gang spell is shorter.
  EXPECT_DOUBLE_EQ(SpellsFromLives(lives, 2400)[0].end_s, 900);
  // A release that takes the count below two cuts the spell: no evidence after it, until
  // a stockout while fewer than two are alive (at 700; one at 1600 is not counted).
  s = SpellsFromLives({{0, 600, true}, {300, 900}, {1200, 2400}, {1500, 2400}}, 2400, {700, 1600},
                      2);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_FALSE(s[0].ended);
  EXPECT_FALSE(s[1].up);
  EXPECT_DOUBLE_EQ(s[1].start_s, 700);
  EXPECT_DOUBLE_EQ(s[1].end_s, 1500);
  EXPECT_TRUE(s[2].up);
  // Never two at once: no up spell at all.
  EXPECT_TRUE(SpellsFromLives({{0, 600}, {900, 1200}}, 2400, {}, 2).empty());
}

TEST(SpellsFromLivesTest, AReleasedNodeLeavesNoEvidenceUntilAStockout) {
  // 0-900 released (destroyed as idle), 1500-2000 taken, now 2400, no stockout: the first
  // up spell is cut, the gap after it is not counted; the second ends in a down spell.
  auto s = SpellsFromLives({{0, 900, true}, {1500, 2000, false}}, 2400);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_TRUE(s[0].up);
  EXPECT_FALSE(s[0].ended);
  EXPECT_TRUE(s[1].up && s[1].ended);
  EXPECT_DOUBLE_EQ(s[1].start_s, 1500);
  EXPECT_FALSE(s[2].up);
  EXPECT_DOUBLE_EQ(s[2].start_s, 2000);
  // A stockout at 1200 in the released gap: down from it until the next life starts.
  s = SpellsFromLives({{0, 900, true}, {1500, 2000, false}}, 2400, {1200, 1300});
  ASSERT_EQ(s.size(), 4u);
  EXPECT_FALSE(s[0].ended);
  EXPECT_FALSE(s[1].up);
  EXPECT_DOUBLE_EQ(s[1].start_s, 1200);
  EXPECT_DOUBLE_EQ(s[1].end_s, 1500);
  EXPECT_TRUE(s[1].ended);
  // A node released last, no stockout since: nothing after it (not down until now).
  s = SpellsFromLives({{0, 900, true}}, 2400);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].ended);
  // Two lives ending together: released only if both were.
  s = SpellsFromLives({{0, 900, true}, {300, 900, false}}, 2400);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_TRUE(s[0].ended);
}

TEST(SpellsFromLivesTest, StockoutsWithoutAnyNodeAreADownSpellAndOnesDuringALifeAreNot) {
  auto s = SpellsFromLives({}, 2400, {1000, 600});
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].up);
  EXPECT_DOUBLE_EQ(s[0].start_s, 600);
  EXPECT_FALSE(s[0].ended);
  // A stockout before the first node: down until it registers; one at 1500 while it
  // lives is not counted.
  s = SpellsFromLives({{1200, 2400}}, 2400, {300, 1500});
  ASSERT_EQ(s.size(), 2u);
  EXPECT_FALSE(s[0].up);
  EXPECT_DOUBLE_EQ(s[0].start_s, 300);
  EXPECT_TRUE(s[0].ended);
  EXPECT_TRUE(s[1].up && !s[1].ended);
  auto m = AvailabilityModel::Empty(180, 8);
  AddSpells(s, m);
  EXPECT_DOUBLE_EQ(Flips(m, false), 1);  // the down spell the stockout began ended
}

TEST(AddSpellsTest, RoundsBoundariesToTicksAndCountsEndedSpellsOnly) {
  auto m = AvailabilityModel::Empty(180, 8);
  // From the lives above: boundaries 900, 1500, 2000, 2400 s are ticks 5, 8.33 -> 8,
  // 11.1 -> 11, 13.3 -> 13: up 5, down 3, up 3, down 2 (going on).
  AddSpells(SpellsFromLives({{0, 900}, {1500, 2000}}, 2400), m);
  EXPECT_DOUBLE_EQ(m.ObservedTicks(), 13);
  EXPECT_DOUBLE_EQ(Flips(m, true), 2);
  EXPECT_DOUBLE_EQ(Flips(m, false), 1);
  // Up 5 ends at age 4 (bin 2), up 3 at age 2 (bin 1); down 3 at age 2.
  EXPECT_DOUBLE_EQ(m.flip[m.State(true, 4)], 1);
  EXPECT_DOUBLE_EQ(m.flip[m.State(true, 2)], 1);
  EXPECT_DOUBLE_EQ(m.flip[m.State(false, 2)], 1);
}

TEST(AddSpellsTest, ASpellShorterThanHalfATickVanishesAndItsNeighboursMerge) {
  auto m = AvailabilityModel::Empty(180, 8);
  // Down 900-950 s rounds to no tick: one up spell of 10 ticks, going on.
  AddSpells({{true, 0, 900, true}, {false, 900, 950, true}, {true, 950, 1800, false}}, m);
  EXPECT_DOUBLE_EQ(m.ObservedTicks(), 10);
  EXPECT_DOUBLE_EQ(Flips(m, true), 0);
  EXPECT_DOUBLE_EQ(Flips(m, false), 0);
}

const char* const kTwoZones =
    "zone,tick,elapsed_s,timestamp_utc,available,spot_usd_hr\n"
    "a,0,0,,1,\n"
    "a,1,180,,1,\n"
    "a,2,360,,0,\n"
    "a,3,540,,0,\n"
    "a,4,720,,0,\n"
    "a,5,900,,1,\n"
    "b,0,0,,0,\n"
    "b,1,200,,1,\n";

TEST(ParseAvailabilityCsvTest, PicksTheZoneAndTheStepIsTheMedianGap) {
  auto s = ParseAvailabilityCsv(kTwoZones, "a", "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->t_s.size(), 6u);
  EXPECT_DOUBLE_EQ(s->step_s, 180);
  EXPECT_EQ(s->up, (std::vector<std::uint8_t>{1, 1, 0, 0, 0, 1}));
  // Up 2 samples (ended), down 3 (ended), up 1 (going on): 2 + 3 + 1 ticks.
  auto m = AvailabilityModel::Empty(180, 8);
  AddSpells(SpellsFromSeries(*s), m);
  EXPECT_DOUBLE_EQ(m.ObservedTicks(), 6);
  EXPECT_DOUBLE_EQ(Flips(m, true), 1);
  EXPECT_DOUBLE_EQ(Flips(m, false), 1);
}

TEST(ParseAvailabilityCsvTest, ErrorsNameWhatToFix) {
  auto many = ParseAvailabilityCsv(kTwoZones, "", "");
  EXPECT_EQ(many.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(many.status().message().find("a, b"), std::string::npos) << many.status().message();
  EXPECT_EQ(ParseAvailabilityCsv(kTwoZones, "c", "").status().field(), "zone");
  EXPECT_EQ(ParseAvailabilityCsv(kTwoZones, "a", "nope").status().field(), "column");
  auto bad = ParseAvailabilityCsv("elapsed_s,available\n0,1\n180,x\n", "", "");
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ParseAvailabilityCsv("elapsed_s,available\n0,1\n", "", "").ok());  // 1 row
  EXPECT_FALSE(ParseAvailabilityCsv("", "", "").ok());
  EXPECT_FALSE(ParseAvailabilityCsv("when,available\n0,1\n1,1\n", "", "").ok());  // no time
  EXPECT_FALSE(ParseAvailabilityCsv("elapsed_s,available\n0,1\n0,1\n", "", "").ok());
  EXPECT_FALSE(ParseAvailabilityCsv("elapsed_s,available\n0,1\n180\n", "", "").ok());
}

TEST(ParseAvailabilityCsvTest, ReadsUtcTimesAndTheOnlyOtherColumn) {
  auto s = ParseAvailabilityCsv(
      "timestamp_utc,up\n2023-02-15T22:08:16Z,1\n2023-02-15T22:11:31Z,0\n", "", "");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_DOUBLE_EQ(s->step_s, 195);
  EXPECT_EQ(s->up, (std::vector<std::uint8_t>{1, 0}));
}

TEST(SpellsFromSeriesTest, AGapOfManyStepsCutsTheSeriesWithoutEndingTheSpell) {
  AvailabilitySeries s{{0, 180, 360, 5000, 5180}, {1, 1, 1, 1, 1}, 180};
  auto spells = SpellsFromSeries(s);
  ASSERT_EQ(spells.size(), 2u);
  EXPECT_FALSE(spells[0].ended);
  EXPECT_DOUBLE_EQ(spells[0].end_s, 540);
  auto m = AvailabilityModel::Empty(180, 8);
  AddSpells(spells, m);
  EXPECT_DOUBLE_EQ(m.ObservedTicks(), 5);
  EXPECT_DOUBLE_EQ(Flips(m, true), 0);
}

TEST(SeriesToCsvTest, RoundTrips) {
  AvailabilitySeries s{{100, 280, 460}, {1, 0, 1}, 180};
  auto back = ParseAvailabilityCsv(SeriesToCsv(s), "", "");
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->up, s.up);
  EXPECT_DOUBLE_EQ(back->t_s[2], 360);
}

}  // namespace
}  // namespace frugal::model
