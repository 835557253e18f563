// Batch assignment as a transportation problem, solved as a min-cost maximum flow with
// Boost.Graph's successive_shortest_path_nonnegative_weights (its headers stay in
// min_cost_flow.cc). Rows are groups of identical jobs, bins are pool capacity:
//
//   source --(supply, priority cost)--> row --(capacity, cost per GPU)--> bin --(capacity)--> sink
//
// A row may have several source arcs, one per priority tier of its members, so one row
// serves every tier and the flow still fills capacity from the highest tier (cheapest
// source arc) down. The flow is maximal: every GPU that can be placed is placed; then the
// total cost is least. The work grows with the capacity placed, not with the backlog: the
// solver stops as soon as no bin has room.
#pragma once

#include <cstdint>
#include <vector>

namespace frugal::policy {

struct FlowProblem {
  struct Source {
    int row = 0;
    std::int64_t supply = 0;  // units (GPUs)
    std::int64_t cost = 0;    // per unit, >= 0
  };
  struct Arc {
    int row = 0;
    int bin = 0;
    std::int64_t capacity = 0;
    std::int64_t cost = 0;  // per unit, >= 0
  };
  int rows = 0;
  std::vector<Source> sources;
  std::vector<std::int64_t> bin_capacity;  // per bin, >= 0
  std::vector<Arc> arcs;
};

struct FlowSolution {
  std::vector<std::int64_t> arc_flow;     // per arc, in the order given
  std::vector<std::int64_t> source_flow;  // per source, in the order given
  std::int64_t flow = 0;                  // units placed
  std::int64_t cost = 0;                  // total cost of the flow (sources and arcs)
  bool used_greedy = false;               // the fast path was provably optimal
};

// The maximum flow of least cost. Deterministic: the same problem gives the same flow.
// Costs must stay below 2^50 so the solver's double arithmetic is exact. Tries the greedy
// answer first (every row whole on its cheapest arc) and keeps it when no arc or bin is
// over-subscribed: every unit is then placed at its least cost, which is optimal.
// `force_flow` skips that (for tests).
FlowSolution SolveMinCostFlow(const FlowProblem& problem, bool force_flow = false);

}  // namespace frugal::policy
