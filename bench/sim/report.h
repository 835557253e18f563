// Aggregates and writes the simulator's results: per-cell statistics of the single-job
// runs, CSVs of every run, the Markdown report with the bars, and the data files the
// gnuplot script (bench/sim/plots.gp) draws. Plain functions over plain records.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "bench/sim/single_runs.h"

namespace frugal::sim {

struct Stats {
  int n = 0;
  double mean = 0;  // of normalised cost
  double p90 = 0;
  int misses = 0;
  double worst_cell = 0;  // the highest mean of a (series, C0/R0, d) cell in the group
};

// Statistics of the normalised cost of `runs` (all of one policy).
Stats StatsOf(const std::vector<const RunRecord*>& runs);

// Share of the optimum's savings captured: (1 - cost) / (1 - optimum), both normalised.
double Captured(double cost, double optimum);

using CellKey = std::tuple<int, double, double>;  // case, fraction, d
struct Aggregate {
  std::vector<std::string> policies;                      // in first-seen order
  std::map<CellKey, std::map<std::string, Stats>> cells;  // per cell and policy
  std::map<std::string, Stats> overall;                   // per policy
  std::map<double, std::map<std::string, Stats>> by_fraction;
  std::map<int, std::map<std::string, Stats>> by_case;
  int below_optimum = 0;  // runs cheaper than the optimum of their job: must stay 0
};
Aggregate AggregateRuns(const std::vector<RunRecord>& runs);

// Every run, one line each.
bool WriteRunsCsv(const std::string& path, const SingleJobSpec& spec,
                  const std::vector<RunRecord>& runs);
// Per cell and policy: n, mean, p90, misses, share captured.
bool WriteCellsCsv(const std::string& path, const SingleJobSpec& spec, const Aggregate& a);

// "mean (p90 x, worst cell y)": the spread beside a mean.
std::string Spread(const Stats& s);

// Markdown helpers.
std::string Fixed(double v, int decimals);
std::string Percent(double share);  // 0.943 -> "94.3%"
std::string PassFail(bool pass);
// A table of policies x (mean, p90, worst cell, misses, captured) for one group of stats.
std::string PolicyTable(const std::vector<std::string>& policies,
                        const std::map<std::string, Stats>& stats);

}  // namespace frugal::sim
