// Spot series for the cost simulator: every zone x instance row of spot_catalog.csv in a
// traces directory (the format of ../shared/traces/README.md), read from its CSV and
// resampled onto the simulator's fixed step grid. Loading is the only I/O of the simulator
// besides writing results; everything downstream works on these plain vectors.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::sim {

// When a series has no spot price (per tick or in the catalogue), spot costs this share of
// on-demand: 0.3 is the paper's own p3.2xlarge ratio ($0.918 / $3.06), the one number the
// traces give for it. Used for the 2022-10-26 probes only.
inline constexpr double kDefaultSpotRatio = 0.3;

struct ZoneSeries {
  std::string file;                  // CSV file name in the traces directory
  std::string trace_set;             // catalogue trace_set, e.g. aws-v100-1x-2023-02
  std::string kind;                  // availability-probe | preemption ...
  std::string zone;                  // us-east-1a
  std::string instance_type;         // p3.2xlarge
  std::string gpu;                   // V100; "none ..." for CPU series
  int gpus_per_instance = 0;         // 0 for CPU series
  int instances_probed = 1;          // 1, or the gang size the count is out of (4, 16)
  double od_price = 0;               // on-demand USD per instance-hour (catalogue)
  bool spot_price_per_tick = false;  // false: flat (catalogue or kDefaultSpotRatio)
  int step_seconds = 0;  // the step of `count` and `price` (the grid, or the native tick)
  // Per step of the grid: instances obtainable during the whole step (the minimum of the
  // samples overlapping it: a sample at 0 inside a step is a reclaim in that step), and the
  // spot price in USD per instance-hour in effect at the step's start.
  std::vector<int> count;
  std::vector<double> price;

  std::string Name() const { return trace_set + "/" + zone + "/" + instance_type; }
  int steps() const { return static_cast<int>(count.size()); }
  bool IsGpu() const { return gpus_per_instance > 0; }
};

struct TraceSet {
  std::string dir;
  int step_seconds = 0;            // the grid; 0: native ticks (each series has its own step)
  std::vector<ZoneSeries> series;  // catalogue order
};

// Loads every catalogue row whose file exists in `dir`. Rows whose file or zone is missing
// are skipped (a traces directory may hold a subset); an unreadable catalogue is an error.
// `step_seconds` > 0 resamples every series onto that grid; 0 keeps each series at its own
// tick, as the Can't Be Late simulator replays it: one step per sample, the step being the
// median gap between samples (the 2023-02 probes' irregular 194-280 s gaps become 195 s).
StatusOr<TraceSet> LoadTraces(const std::string& dir, int step_seconds);

// A sample: seconds since the series' start, the value and the spot price (< 0: none).
struct Sample {
  double t = 0;
  int value = 0;
  double price = -1;
};

// Resamples samples (sorted by t) onto steps of `step_seconds`: count = minimum over the
// samples overlapping each step (the last sample holds for one step), price = the price in
// effect at the step's start (`flat_price` where the samples have none).
void Resample(const std::vector<Sample>& samples, int step_seconds, double flat_price,
              ZoneSeries& out);

// One step per sample (native tick): count and price as sampled, `flat_price` where the
// samples have none; the step is the median gap between samples, in whole seconds.
void NativeTicks(const std::vector<Sample>& samples, double flat_price, ZoneSeries& out);

// The series with each step split into `k` equal sub-steps of the same count and price
// (k >= 1 and dividing its step).
ZoneSeries Subdivide(const ZoneSeries& series, int k);

}  // namespace frugal::sim
