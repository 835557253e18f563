#include "scheduler/policy/placement/min_cost_flow.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>

namespace frugal::policy {
namespace {

// (units placed, least cost) of the best integral solution, by trying them all.
std::pair<std::int64_t, std::int64_t> BruteForce(const FlowProblem& p) {
  std::vector<std::int64_t> flow(p.arcs.size(), 0);
  std::pair<std::int64_t, std::int64_t> best{-1, 0};
  std::function<void(size_t)> go = [&](size_t a) {
    if (a == p.arcs.size()) {
      std::vector<std::int64_t> placed(p.rows, 0), bin(p.bin_capacity.size(), 0);
      std::int64_t cost = 0, total = 0;
      for (size_t i = 0; i < p.arcs.size(); ++i) {
        placed[p.arcs[i].row] += flow[i];
        bin[p.arcs[i].bin] += flow[i];
        cost += flow[i] * p.arcs[i].cost;
        total += flow[i];
      }
      for (size_t b = 0; b < bin.size(); ++b)
        if (bin[b] > p.bin_capacity[b]) return;
      for (int r = 0; r < p.rows; ++r) {
        // A row's placed units come from its cheapest sources first.
        std::vector<FlowProblem::Source> mine;
        for (const auto& s : p.sources)
          if (s.row == r) mine.push_back(s);
        std::sort(mine.begin(), mine.end(), [](auto& x, auto& y) { return x.cost < y.cost; });
        std::int64_t left = placed[r];
        for (const auto& s : mine) {
          std::int64_t take = std::min(left, s.supply);
          cost += take * s.cost;
          left -= take;
        }
        if (left > 0) return;  // more than the row's supply
      }
      if (total > best.first || (total == best.first && cost < best.second)) best = {total, cost};
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
  p.rows = 2;
  p.sources = {{0, 2, 0}, {1, 2, 0}};
  p.bin_capacity = {2, 10, 10};
  p.arcs = {{0, 0, 2, 1}, {0, 1, 2, 10}, {1, 0, 2, 1}, {1, 2, 2, 100}};
  FlowSolution s = SolveMinCostFlow(p);
  EXPECT_FALSE(s.used_greedy);
  EXPECT_EQ(s.flow, 4);
  EXPECT_EQ(s.cost, 22);
  EXPECT_EQ(s.arc_flow, (std::vector<std::int64_t>{0, 2, 2, 0}));
}

TEST(MinCostFlowTest, CapacityGoesToTheCheapestSourceArcsFirst) {
  // One bin of 3 units; a row with tier sources costing 0 (2 units) and 1000 (2 units),
  // another row costing 500 (2 units). Filled: 2 at 0, then 1 at 500.
  FlowProblem p;
  p.rows = 2;
  p.sources = {{0, 2, 0}, {0, 2, 1000}, {1, 2, 500}};
  p.bin_capacity = {3};
  p.arcs = {{0, 0, 4, 7}, {1, 0, 2, 1}};
  FlowSolution s = SolveMinCostFlow(p);
  EXPECT_EQ(s.flow, 3);
  EXPECT_EQ(s.source_flow, (std::vector<std::int64_t>{2, 0, 1}));
  EXPECT_EQ(s.arc_flow, (std::vector<std::int64_t>{2, 1}));
}

TEST(MinCostFlowTest, GreedyIsUsedOnlyWhenNothingIsOversubscribed) {
  FlowProblem p;
  p.rows = 2;
  p.sources = {{0, 2, 0}, {1, 3, 0}};
  p.bin_capacity = {5, 10};
  p.arcs = {{0, 0, 2, 1}, {0, 1, 2, 10}, {1, 0, 3, 1}};
  FlowSolution s = SolveMinCostFlow(p);
  EXPECT_TRUE(s.used_greedy);
  EXPECT_EQ(s.cost, 5);
  FlowSolution f = SolveMinCostFlow(p, /*force_flow=*/true);
  EXPECT_EQ(f.cost, 5);
  EXPECT_EQ(f.arc_flow, s.arc_flow);
}

TEST(MinCostFlowTest, MatchesBruteForceOnRandomSmallProblems) {
  std::mt19937 rng(4);
  for (int round = 0; round < 300; ++round) {
    FlowProblem p;
    p.rows = 1 + rng() % 3;
    int bins = 1 + rng() % 3;
    for (int r = 0; r < p.rows; ++r) {
      for (int t = rng() % 3; t >= 0; --t)
        p.sources.push_back(
            {r, static_cast<std::int64_t>(rng() % 3), static_cast<std::int64_t>(rng() % 3) * 1000});
    }
    for (int b = 0; b < bins; ++b) p.bin_capacity.push_back(rng() % 4);
    for (int r = 0; r < p.rows; ++r)
      for (int b = 0; b < bins; ++b)
        if (rng() % 3)
          p.arcs.push_back(
              {r, b, static_cast<std::int64_t>(rng() % 4), static_cast<std::int64_t>(rng() % 40)});
    SCOPED_TRACE("round " + std::to_string(round));
    auto best = BruteForce(p);
    for (bool force : {true, false}) {
      FlowSolution s = SolveMinCostFlow(p, force);
      EXPECT_EQ(s.flow, best.first);
      EXPECT_EQ(s.cost, best.second);
    }
  }
}

}  // namespace
}  // namespace frugal::policy
