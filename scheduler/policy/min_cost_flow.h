// Batch assignment as a transportation problem: rows (groups of identical jobs) with a
// supply of GPUs, bins (pool capacity) with a capacity, row->bin arcs with a cost per GPU,
// and per row an uncapacitated "stay unplaced" arc (Firmament's unscheduled arc). Solved as
// a min-cost max-flow with Boost.Graph's successive_shortest_path_nonnegative_weights; the
// Boost headers stay in min_cost_flow.cc.
#pragma once

#include <cstdint>
#include <vector>

namespace frugal::policy {

struct FlowProblem {
  struct Arc {
    int row = 0;
    int bin = 0;
    std::int64_t capacity = 0;
    std::int64_t cost = 0;  // per unit, >= 0
  };
  std::vector<std::int64_t> supply;         // per row, >= 0
  std::vector<std::int64_t> unplaced_cost;  // per row, per unit, >= 0
  std::vector<std::int64_t> bin_capacity;   // per bin, >= 0
  std::vector<Arc> arcs;
};

struct FlowSolution {
  std::vector<std::int64_t> flow;  // per arc, in the order given
  std::int64_t cost = 0;           // total, unplaced units included
  bool used_greedy = false;        // true when the fast path was provably optimal
};

// Minimum total cost over every row's supply (placed or unplaced). Deterministic: the same
// problem gives the same flow. Costs must fit in 2^50 so the solver's double arithmetic
// stays exact. First tries the greedy answer (every row on its cheapest arc) and keeps it
// when no arc or bin is over-subscribed, which is then optimal; `force_flow` skips that.
FlowSolution SolveMinCostFlow(const FlowProblem& problem, bool force_flow = false);

}  // namespace frugal::policy
