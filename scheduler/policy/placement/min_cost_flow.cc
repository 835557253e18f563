// The only file that includes Boost.Graph (its headers are slow to compile).
#include "scheduler/policy/placement/min_cost_flow.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/successive_shortest_path_nonnegative_weights.hpp>

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
  long Flow(Edge e) const {
    return boost::get(boost::edge_capacity, g_, e) -
           boost::get(boost::edge_residual_capacity, g_, e);
  }

 private:
  Graph g_;
};

bool TryGreedy(const FlowProblem& p, FlowSolution& out) {
  std::vector<std::int64_t> supply(p.rows, 0), bin_load(p.bin_capacity.size(), 0);
  for (const auto& s : p.sources) supply[s.row] += s.supply;
  std::vector<int> best(p.rows, -1);
  for (int a = 0; a < static_cast<int>(p.arcs.size()); ++a) {
    const auto& arc = p.arcs[a];
    if (arc.capacity <= 0 || p.bin_capacity[arc.bin] <= 0) continue;
    if (best[arc.row] < 0 || arc.cost < p.arcs[best[arc.row]].cost) best[arc.row] = a;
  }
  out.arc_flow.assign(p.arcs.size(), 0);
  for (int r = 0; r < p.rows; ++r) {
    // A row with nowhere to go places nothing in any solution.
    if (supply[r] == 0 || best[r] < 0) continue;
    const auto& arc = p.arcs[best[r]];
    if (arc.capacity < supply[r]) return false;
    bin_load[arc.bin] += supply[r];
    if (bin_load[arc.bin] > p.bin_capacity[arc.bin]) return false;
    out.arc_flow[best[r]] = supply[r];
    out.cost += supply[r] * arc.cost;
    out.flow += supply[r];
  }
  out.source_flow.clear();
  for (const auto& s : p.sources) {
    std::int64_t f = best[s.row] >= 0 ? s.supply : 0;
    out.source_flow.push_back(f);
    out.cost += f * s.cost;
  }
  out.used_greedy = true;
  return true;
}

}  // namespace

FlowSolution SolveMinCostFlow(const FlowProblem& p, bool force_flow) {
  FlowSolution out;
  if (!force_flow && TryGreedy(p, out)) return out;
  out = FlowSolution{};

  const int bins = static_cast<int>(p.bin_capacity.size());
  const int source = 0, sink = 1, row0 = 2, bin0 = 2 + p.rows;
  Builder b(2 + p.rows + bins);
  std::vector<std::pair<int, Edge>> source_edges, arc_edges;
  for (int i = 0; i < static_cast<int>(p.sources.size()); ++i) {
    const auto& s = p.sources[i];
    if (s.supply > 0)
      source_edges.push_back(
          {i, b.Add(source, row0 + s.row, s.supply, static_cast<double>(s.cost))});
  }
  for (int a = 0; a < static_cast<int>(p.arcs.size()); ++a) {
    const auto& arc = p.arcs[a];
    if (arc.capacity <= 0 || p.bin_capacity[arc.bin] <= 0) continue;
    arc_edges.push_back(
        {a, b.Add(row0 + arc.row, bin0 + arc.bin, arc.capacity, static_cast<double>(arc.cost))});
  }
  for (int k = 0; k < bins; ++k) {
    if (p.bin_capacity[k] > 0) b.Add(bin0 + k, sink, p.bin_capacity[k], 0);
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

  out.arc_flow.assign(p.arcs.size(), 0);
  out.source_flow.assign(p.sources.size(), 0);
  for (auto& [a, e] : arc_edges) {
    out.arc_flow[a] = b.Flow(e);
    out.cost += out.arc_flow[a] * p.arcs[a].cost;
    out.flow += out.arc_flow[a];
  }
  for (auto& [i, e] : source_edges) {
    out.source_flow[i] = b.Flow(e);
    out.cost += out.source_flow[i] * p.sources[i].cost;
  }
  return out;
}

}  // namespace frugal::policy
