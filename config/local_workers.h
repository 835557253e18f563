// The `local` provider's configuration: frugal-worker processes the scheduler starts on this
// machine with pretend GPUs (demo, tests, a laptop), per pool, and for spot pools where
// their interruptions come from: a rate, or a real availability trace replayed faster.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace YAML {
class Node;
}

namespace frugal::config {

struct PreemptionSpec {
  enum class Kind { kNone, kRate, kTrace };
  Kind kind = Kind::kNone;
  double rate_per_node_hour = 0;  // kRate: Poisson notices per node-hour of wall time
  std::string trace;              // kTrace: a CSV in ../shared/traces tick schema
  std::string zone;               // kTrace: the series to replay (required)
  double speedup = 1;             // kTrace: trace seconds per wall second
  double start_s = 0;             // kTrace: where in the series to begin (elapsed_s)
  std::uint64_t seed = 1;         // kRate: the random stream, so runs repeat
};

struct LocalWorkerSpec {
  std::string pool;  // must exist (frugal admin pool set); workers retry until it does
  int nodes = 1;      // started at once (0 allowed when max_nodes > 0)
  int max_nodes = -1;  // the pool may grow to this many when the policy asks; -1: = nodes
  int gpus_per_node = 1;
  std::string gpu_type = "a100";
  int gpu_mem_gb = 80;
  Seconds grace{5};          // SIGTERM -> SIGKILL for the jobs on a notice
  Seconds restart_delay{5};  // a reclaimed or crashed node comes back after this
  PreemptionSpec preemption;
};

// Parses the `local_workers:` sequence; errors name the entry and key.
StatusOr<std::vector<LocalWorkerSpec>> ParseLocalWorkers(const YAML::Node& node);

}  // namespace frugal::config
