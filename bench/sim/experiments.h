// The four experiments of issue 6, each returning its section of the report and its bars.
// Experiments 1-3 are single jobs (single_runs.h); 4 is the cluster workload (cluster_sim.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sim/traces.h"

namespace frugal::sim {

struct SimOptions {
  std::string traces_dir;
  std::string out_dir;
  bool smoke = false;
  int threads = 2;
  std::uint64_t seed = 20240416;
  int step_seconds = 180;   // the grid: divides both changeovers (3 and 12 minutes)
  int starts = 300;         // submission points per series (experiment 1)
  int multi_starts = 300;   // per zone group, experiment 2
  int gang_starts = 100;    // per series, experiment 3 (gangs of 16 are the slowest runs)
  double checkpoint_hours = 0.25;
  int frugal_cycle_steps = 1;
  double prior_per_node_hour = 0.1;
};

struct Bar {
  std::string name;
  bool pass = false;
  std::string measured;  // the numbers behind the verdict
};

struct Section {
  std::string markdown;
  std::vector<Bar> bars;
  std::vector<std::string> headline;  // "key number" lines for the summary table
  double seconds = 0;
};

Section RunExperiment1(const TraceSet& traces, const SimOptions& options);
Section RunExperiment2(const TraceSet& traces, const SimOptions& options);
Section RunExperiment3(const TraceSet& traces, const SimOptions& options);
Section RunExperiment4(const TraceSet& traces, const SimOptions& options);

}  // namespace frugal::sim
