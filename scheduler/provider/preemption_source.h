// Where a local spot pool's interruptions come from. Pure: the caller passes elapsed time,
// so tests drive these with no clock and the same seed repeats the same interruptions.
//   RatePreemptions: a Poisson process, `rate` notices per node-hour over the live nodes.
//   TraceAvailability: a real availability series (../shared/traces tick schema, 1 =
//     available, or a count for multi-instance series) replayed at a speed-up; it says how
//     many of a pool's nodes may be alive at a moment.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::provider {

class RatePreemptions {
 public:
  RatePreemptions(double per_node_hour, std::uint64_t seed);
  // Notices due in the interval since the previous call, for `alive` live nodes; the first
  // call only starts the clock. `elapsed_s` must not go backwards.
  int Due(double elapsed_s, int alive);

 private:
  double NextGap(int alive);  // seconds to the next notice among `alive` nodes

  double per_node_hour_;
  std::mt19937_64 rng_;
  double last_s_ = -1;
  double next_s_ = -1;  // when the next notice falls, or < 0 when none is drawn
};

class TraceAvailability {
 public:
  // Loads the rows of `zone` from `path` (columns zone, tick, elapsed_s, timestamp_utc,
  // available, ...). NotFound when the file or zone is missing, InvalidArgument if malformed.
  static StatusOr<TraceAvailability> Load(const std::string& path, const std::string& zone);

  // How many of `nodes` may be alive at trace time `t_s` (seconds since the series start;
  // the series repeats past its end). A 0/1 series allows all or none; a count series of
  // at most M instances allows floor(nodes * count / M).
  int Allowed(double t_s, int nodes) const;

  double span_s() const { return span_s_; }
  size_t ticks() const { return elapsed_.size(); }

 private:
  std::vector<double> elapsed_;
  std::vector<int> available_;
  int max_count_ = 1;
  double span_s_ = 0;  // elapsed of the last tick + one tick gap
};

}  // namespace frugal::provider
