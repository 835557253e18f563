#include "scheduler/policy/min_cost_flow.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>

namespace frugal::policy {
namespace {

// The cost of the best integral solution, by trying them all (tiny problems only).
std::int64_t BruteForce(const FlowProblem& p) {
  std::vector<std::int64_t> flow(p.arcs.size(), 0);
  std::int64_t best = -1;
  std::function<void(size_t)> go = [&](size_t a) {
    if (a == p.arcs.size()) {
      std::vector<std::int64_t> row(p.supply.size(), 0), bin(p.bin_capacity.size(), 0);
      std::int64_t cost = 0;
      for (size_t i = 0; i < p.arcs.size(); ++i) {
        row[p.arcs[i].row] += flow[i];
        bin[p.arcs[i].bin] += flow[i];
        cost += flow[i] * p.arcs[i].cost;
      }
      for (size_t r = 0; r < row.size(); ++r) {
        if (row[r] > p.supply[r]) return;
        cost += (p.supply[r] - row[r]) * p.unplaced_cost[r];
      }
      for (size_t b = 0; b < bin.size(); ++b)
        if (bin[b] > p.bin_capacity[b]) return;
      if (best < 0 || cost < best) best = cost;
      return;
    }
    for (std::int64_t f = 0; f <= p.arcs[a].capacity; ++f) {
      flow[a] = f;
      go(a + 1);
    }
    flow[a] = 0;
  };
  go(0);
  return best;
}

TEST(MinCostFlowTest, GivesTheScarceCheapBinToTheRowWithTheDearestAlternative) {
  // Bin 0 (reserved, cost 1) has 2 units. Row 0 may also use bin 1 at cost 10, row 1 only
  // bin 2 at cost 100. Greedy by row order would give bin 0 to row 0: 2x1 + 2x100 = 202.
  // Optimal: row 1 on bin 0, row 0 on bin 1: 2x10 + 2x1 = 22.
  FlowProblem p;
  p.supply = {2, 2};
  p.unplaced_cost = {1000, 1000};
  p.bin_capacity = {2, 10, 10};
  p.arcs = {{0, 0, 2, 1}, {0, 1, 2, 10}, {1, 0, 2, 1}, {1, 2, 2, 100}};
  FlowSolution s = SolveMinCostFlow(p);
  EXPECT_FALSE(s.used_greedy);
  EXPECT_EQ(s.cost, 22);
  EXPECT_EQ(s.flow, (std::vector<std::int64_t>{0, 2, 2, 0}));
}

TEST(MinCostFlowTest, GreedyIsUsedOnlyWhenNothingIsOversubscribed) {
  FlowProblem p;
  p.supply = {2, 3};
  p.unplaced_cost = {1000, 1000};
  p.bin_capacity = {5, 10};
  p.arcs = {{0, 0, 2, 1}, {0, 1, 2, 10}, {1, 0, 3, 1}};
  FlowSolution s = SolveMinCostFlow(p);
  EXPECT_TRUE(s.used_greedy);
  EXPECT_EQ(s.cost, 5);
  EXPECT_EQ(SolveMinCostFlow(p, /*force_flow=*/true).cost, 5);
}

TEST(MinCostFlowTest, LeavesUnitsUnplacedWhenThatIsCheaper) {
  FlowProblem p;
  p.supply = {4};
  p.unplaced_cost = {5};
  p.bin_capacity = {4};
  p.arcs = {{0, 0, 4, 6}};
  FlowSolution s = SolveMinCostFlow(p);
  EXPECT_EQ(s.flow[0], 0);
  EXPECT_EQ(s.cost, 20);
}

TEST(MinCostFlowTest, MatchesBruteForceOnRandomSmallProblems) {
  std::mt19937 rng(4);
  for (int round = 0; round < 300; ++round) {
    FlowProblem p;
    int rows = 1 + rng() % 3, bins = 1 + rng() % 3;
    for (int r = 0; r < rows; ++r) {
      p.supply.push_back(rng() % 4);
      p.unplaced_cost.push_back(rng() % 2 ? 1000 : 5 + rng() % 30);
    }
    for (int b = 0; b < bins; ++b) p.bin_capacity.push_back(rng() % 4);
    for (int r = 0; r < rows; ++r)
      for (int b = 0; b < bins; ++b)
        if (rng() % 3) p.arcs.push_back({r, b, static_cast<std::int64_t>(rng() % 4),
                                         static_cast<std::int64_t>(rng() % 40)});
    SCOPED_TRACE("round " + std::to_string(round));
    std::int64_t best = BruteForce(p);
    EXPECT_EQ(SolveMinCostFlow(p, true).cost, best);
    EXPECT_EQ(SolveMinCostFlow(p).cost, best);
  }
}

}  // namespace
}  // namespace frugal::policy
