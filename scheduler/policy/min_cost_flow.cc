// The only file that includes Boost.Graph (its headers are slow to compile).
#include "scheduler/policy/min_cost_flow.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/successive_shortest_path_nonnegative_weights.hpp>
#include <limits>

namespace frugal::policy {

namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
// Weights are doubles holding integers below 2^53: sums and differences stay exact, so the
// reduced costs Dijkstra sees are never slightly negative, and the "infinite" distance of
// an unreachable vertex saturates instead of overflowing as a signed integer would.
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<
        boost::edge_capacity_t, long,
        boost::property<boost::edge_residual_capacity_t, long,
                        boost::property<boost::edge_reverse_t, Traits::edge_descriptor,
                                        boost::property<boost::edge_weight_t, double>>>>>;
using Edge = Traits::edge_descriptor;

class Builder {
 public:
  explicit Builder(int vertices) : g_(vertices) {}
  Edge Add(int from, int to, long capacity, double cost) {
    Edge e = boost::add_edge(from, to, g_).first;
    Edge r = boost::add_edge(to, from, g_).first;
    boost::put(boost::edge_capacity, g_, e, capacity);
    boost::put(boost::edge_capacity, g_, r, 0);
    boost::put(boost::edge_weight, g_, e, cost);
    boost::put(boost::edge_weight, g_, r, -cost);
    boost::put(boost::edge_reverse, g_, e, r);
    boost::put(boost::edge_reverse, g_, r, e);
    return e;
  }
  Graph& graph() { return g_; }

 private:
  Graph g_;
};

// Every row on its cheapest option (lowest index on ties). Optimal when it fits: each row
// then pays its own minimum, a lower bound on any solution.
bool TryGreedy(const FlowProblem& p, FlowSolution& out) {
  std::vector<std::int64_t> bin_load(p.bin_capacity.size(), 0);
  std::vector<int> best(p.supply.size(), -1);
  for (int a = 0; a < static_cast<int>(p.arcs.size()); ++a) {
    const auto& arc = p.arcs[a];
    if (arc.capacity <= 0 || p.bin_capacity[arc.bin] <= 0) continue;
    if (arc.cost >= p.unplaced_cost[arc.row]) continue;
    if (best[arc.row] < 0 || arc.cost < p.arcs[best[arc.row]].cost) best[arc.row] = a;
  }
  out.flow.assign(p.arcs.size(), 0);
  out.cost = 0;
  for (size_t r = 0; r < p.supply.size(); ++r) {
    if (best[r] < 0) {
      out.cost += p.supply[r] * p.unplaced_cost[r];
      continue;
    }
    const auto& arc = p.arcs[best[r]];
    if (arc.capacity < p.supply[r]) return false;
    bin_load[arc.bin] += p.supply[r];
    if (bin_load[arc.bin] > p.bin_capacity[arc.bin]) return false;
    out.flow[best[r]] = p.supply[r];
    out.cost += p.supply[r] * arc.cost;
  }
  out.used_greedy = true;
  return true;
}

}  // namespace

FlowSolution SolveMinCostFlow(const FlowProblem& p, bool force_flow) {
  FlowSolution out;
  if (!force_flow && TryGreedy(p, out)) return out;
  out = FlowSolution{};

  const int rows = static_cast<int>(p.supply.size());
  const int bins = static_cast<int>(p.bin_capacity.size());
  const int source = 0, sink = 1, row0 = 2, bin0 = 2 + rows;
  Builder b(2 + rows + bins);
  for (int r = 0; r < rows; ++r) {
    if (p.supply[r] <= 0) continue;
    b.Add(source, row0 + r, p.supply[r], 0);
    b.Add(row0 + r, sink, p.supply[r], static_cast<double>(p.unplaced_cost[r]));
  }
  for (int k = 0; k < bins; ++k) {
    if (p.bin_capacity[k] > 0) b.Add(bin0 + k, sink, p.bin_capacity[k], 0);
  }
  std::vector<std::pair<int, Edge>> arc_edges;
  for (int a = 0; a < static_cast<int>(p.arcs.size()); ++a) {
    const auto& arc = p.arcs[a];
    if (arc.capacity <= 0 || p.supply[arc.row] <= 0 || p.bin_capacity[arc.bin] <= 0) continue;
    // An arc dearer than staying unplaced never carries flow: leave it out.
    if (arc.cost >= p.unplaced_cost[arc.row]) continue;
    long cap = static_cast<long>(std::min(arc.capacity, p.supply[arc.row]));
    arc_edges.push_back({a, b.Add(row0 + arc.row, bin0 + arc.bin, cap,
                                  static_cast<double>(arc.cost))});
  }

  Graph& g = b.graph();
  const auto n = boost::num_vertices(g);
  std::vector<Edge> pred(n);
  std::vector<double> dist(n), dist_prev(n);
  auto index = boost::get(boost::vertex_index, g);
  boost::successive_shortest_path_nonnegative_weights(
      g, source, sink, boost::get(boost::edge_capacity, g),
      boost::get(boost::edge_residual_capacity, g), boost::get(boost::edge_weight, g),
      boost::get(boost::edge_reverse, g), index,
      boost::make_iterator_property_map(pred.begin(), index),
      boost::make_iterator_property_map(dist.begin(), index),
      boost::make_iterator_property_map(dist_prev.begin(), index));

  out.flow.assign(p.arcs.size(), 0);
  std::vector<std::int64_t> placed(rows, 0);
  for (auto& [a, e] : arc_edges) {
    long f = boost::get(boost::edge_capacity, g, e) - boost::get(boost::edge_residual_capacity, g, e);
    out.flow[a] = f;
    placed[p.arcs[a].row] += f;
    out.cost += f * p.arcs[a].cost;
  }
  for (int r = 0; r < rows; ++r) {
    out.cost += std::max<std::int64_t>(0, p.supply[r] - placed[r]) * p.unplaced_cost[r];
  }
  return out;
}

}  // namespace frugal::policy
