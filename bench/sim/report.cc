#include "bench/sim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace frugal::sim {

Stats StatsOf(const std::vector<const RunRecord*>& runs) {
  Stats s;
  s.n = static_cast<int>(runs.size());
  if (runs.empty()) return s;
  std::vector<double> v;
  v.reserve(runs.size());
  double sum = 0;
  for (const auto* r : runs) {
    v.push_back(r->norm);
    sum += r->norm;
    s.misses += r->missed;
  }
  s.mean = sum / s.n;
  // Nearest-rank p90: the smallest value with at least 90% of the runs at or below it.
  std::sort(v.begin(), v.end());
  size_t rank = static_cast<size_t>(std::ceil(0.9 * v.size()));
  s.p90 = v[std::max<size_t>(1, rank) - 1];
  return s;
}

double Captured(double cost, double optimum) {
  double room = 1 - optimum;
  return room > 1e-12 ? (1 - cost) / room : 1.0;
}

Aggregate AggregateRuns(const std::vector<RunRecord>& runs) {
  Aggregate a;
  std::map<CellKey, std::map<std::string, std::vector<const RunRecord*>>> cells;
  std::map<std::string, std::vector<const RunRecord*>> overall;
  std::map<double, std::map<std::string, std::vector<const RunRecord*>>> by_fraction;
  std::map<int, std::map<std::string, std::vector<const RunRecord*>>> by_case;
  for (const RunRecord& r : runs) {
    if (std::find(a.policies.begin(), a.policies.end(), r.policy) == a.policies.end())
      a.policies.push_back(r.policy);
    cells[{r.case_index, r.fraction, r.d_hours}][r.policy].push_back(&r);
    overall[r.policy].push_back(&r);
    by_fraction[r.fraction][r.policy].push_back(&r);
    by_case[r.case_index][r.policy].push_back(&r);
  }
  std::map<std::tuple<int, int, double, double>, double> optimum;
  for (const RunRecord& r : runs)
    if (r.policy == kOptimumName) optimum[{r.case_index, r.start, r.fraction, r.d_hours}] = r.cost;
  for (const RunRecord& r : runs) {
    auto it = optimum.find({r.case_index, r.start, r.fraction, r.d_hours});
    if (it != optimum.end() && r.cost < it->second - 1e-9) ++a.below_optimum;
  }
  for (auto& [k, m] : cells)
    for (auto& [p, v] : m) a.cells[k][p] = StatsOf(v);
  for (auto& [p, v] : overall) a.overall[p] = StatsOf(v);
  for (auto& [f, m] : by_fraction)
    for (auto& [p, v] : m) a.by_fraction[f][p] = StatsOf(v);
  for (auto& [c, m] : by_case)
    for (auto& [p, v] : m) a.by_case[c][p] = StatsOf(v);
  // The worst cell of every group: the highest cell mean among the group's cells.
  for (auto& [key, m] : a.cells) {
    for (auto& [p, s] : m) {
      s.worst_cell = s.mean;
      auto raise = [&](Stats& g) { g.worst_cell = std::max(g.worst_cell, s.mean); };
      raise(a.overall[p]);
      raise(a.by_fraction[std::get<1>(key)][p]);
      raise(a.by_case[std::get<0>(key)][p]);
    }
  }
  return a;
}

bool WriteRunsCsv(const std::string& path, const SingleJobSpec& spec,
                  const std::vector<RunRecord>& runs) {
  std::ofstream out(path);
  out << "experiment,series,fraction,d_hours,start_step,policy,cost_usd,norm_cost,missed,"
         "finish_hours,reclaims,lost_hours,spot_hours,od_hours,launches\n";
  char buf[256];
  for (const RunRecord& r : runs) {
    std::snprintf(buf, sizeof buf, "%.2f,%.2f,%d,%s,%.4f,%.6f,%d,%.2f,%d,%.2f,%.2f,%.2f,%d\n",
                  r.fraction, r.d_hours, r.start, r.policy.c_str(), r.cost, r.norm,
                  r.missed ? 1 : 0, r.finish_hours, r.reclaims, r.lost_hours, r.spot_hours,
                  r.od_hours, r.launches);
    out << spec.experiment << ',' << spec.cases[r.case_index].name << ',' << buf;
  }
  return static_cast<bool>(out);
}

bool WriteCellsCsv(const std::string& path, const SingleJobSpec& spec, const Aggregate& a) {
  std::ofstream out(path);
  out << "experiment,series,fraction,d_hours,policy,runs,mean_norm_cost,p90_norm_cost,misses,"
         "share_of_optimum_savings\n";
  char buf[256];
  for (const auto& [key, stats] : a.cells) {
    auto opt = stats.find(kOptimumName);
    for (const auto& p : a.policies) {
      auto it = stats.find(p);
      if (it == stats.end()) continue;
      const Stats& s = it->second;
      double share = opt == stats.end() ? 0 : Captured(s.mean, opt->second.mean);
      std::snprintf(buf, sizeof buf, "%.2f,%.2f,%s,%d,%.4f,%.4f,%d,%.4f\n", std::get<1>(key),
                    std::get<2>(key), p.c_str(), s.n, s.mean, s.p90, s.misses, share);
      out << spec.experiment << ',' << spec.cases[std::get<0>(key)].name << ',' << buf;
    }
  }
  return static_cast<bool>(out);
}

std::string Fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::string Percent(double share) {
  double v = 100 * share;
  return Fixed(std::abs(v) < 0.05 ? 0.0 : v, 1) + "%";  // no "-0.0%"
}

std::string Spread(const Stats& s) {
  return Fixed(s.mean, 3) + " (p90 " + Fixed(s.p90, 3) + ", worst cell " + Fixed(s.worst_cell, 3) +
         ")";
}

std::string PassFail(bool pass) { return pass ? "**PASS**" : "**FAIL**"; }

std::string PolicyTable(const std::vector<std::string>& policies,
                        const std::map<std::string, Stats>& stats) {
  std::ostringstream o;
  o << "| policy | runs | mean cost | p90 cost | worst cell (mean) | deadline misses | share of "
       "optimum's savings |\n"
    << "|---|---:|---:|---:|---:|---:|---:|\n";
  auto opt = stats.find(kOptimumName);
  for (const auto& p : policies) {
    auto it = stats.find(p);
    if (it == stats.end()) continue;
    const Stats& s = it->second;
    o << "| " << p << " | " << s.n << " | " << Fixed(s.mean, 3) << " | " << Fixed(s.p90, 3) << " | "
      << Fixed(s.worst_cell, 3) << " | " << (p == kOptimumName ? "-" : std::to_string(s.misses))
      << " | " << (opt == stats.end() ? "-" : Percent(Captured(s.mean, opt->second.mean)))
      << " |\n";
  }
  return o.str();
}

}  // namespace frugal::sim
