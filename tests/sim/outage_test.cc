// The multi-zone case of decision 0015 through the simulator's Frugal (the real policy):
// with two spot zones, a cheaper one that is down and whose history shows long outages,
// and a dearer one with room, Frugal waits only if the saving over the run outweighs what
// the expected outage could cost at the end.
#include <gtest/gtest.h>

#include <string>

#include "bench/sim/frugal_controller.h"
#include "bench/sim/single_runs.h"
#include "tests/sim/sim_test_util.h"

namespace frugal::sim {
namespace {

using testing::HandMarket;

// One-hour steps. Zone 0: up 4 h, down 6 h, five times over (mean outage learned about
// (1 + 30) / (1 + 5) = 5.2 h), then down at the job's submission (step 50); zone 1 always
// up. A 10-hour job due in 40 hours (slack to spare), changeover 1 h, checkpoint every hour.
Market TwoZones(double zone1_price) {
  std::string z0, z1;
  for (int k = 0; k < 5; ++k) z0 += "1111000000";
  z0 += std::string(8, '0') + std::string(42, '1');
  z1 = std::string(z0.size(), '1');
  return HandMarket({z0, z1}, {0.30, zone1_price}, 1.0);
}

// Where Frugal puts the job in its first step.
int FirstMove(const Market& m) {
  auto policy = FrugalPolicyFor(1.0);
  FrugalController frugal(*policy);
  RunResult r = RunJob(m, testing::Job(10, 40, 1, 1, 50), frugal, true);
  EXPECT_FALSE(r.missed);
  return r.timeline.empty() ? kIdle : r.timeline.front().where;
}

TEST(OutageSimTest, RunsOnTheDearerZoneWhenTheSavingIsSmallerThanTheOutageCouldCost) {
  Market m = TwoZones(0.45);
  ASSERT_GT(model::LearnedOutageHours(m.zones[0].outages[50], m.zones[0].down_hours[50]), 4.0);
  EXPECT_EQ(FirstMove(m), 1);
}

TEST(OutageSimTest, WaitsForTheCheaperZoneWhenTheSavingOutweighsTheOutage) {
  EXPECT_EQ(FirstMove(TwoZones(0.85)), kIdle);
}

}  // namespace
}  // namespace frugal::sim
