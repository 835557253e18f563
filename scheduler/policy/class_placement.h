// Placement of one priority class on the capacity left by the classes above it.
// Identical jobs (same GPUs, same option costs within a quantum, same unplaced cost) are
// aggregated into rows of a min-cost flow over pools; the flow's GPUs per row and pool are
// rounded down to whole gangs, gangs are bin-packed onto nodes (largest first, best fit),
// and whatever rounding or packing left over is repaired greedily in priority order.
#pragma once

#include <vector>

#include "scheduler/policy/capacity.h"
#include "scheduler/policy/job_options.h"

namespace frugal::policy {

enum class Outcome {
  kNone,
  kPlaced,       // slices on live nodes of OptionEntry(option)
  kNewNode,      // waits for a node the provider adds to OptionEntry(option)
  kWaitCheaper,  // chose to wait for `option` (no room now) instead of paying for `alt_option`
  kNoCapacity,   // allowed somewhere, but nothing has room: a preemption candidate
  kNoOption,     // no pool may ever run it (type, tolerance, deadline)
};

struct JobResult {
  Outcome outcome = Outcome::kNone;
  int option = -1;
  int alt_option = -1;
  std::vector<Capacity::Slice> slices;
  double eta_hours = 0;  // kWaitCheaper: when `option` is expected to have room
};

// Unplaced penalty per GPU when waiting is not a choice: above any money cost, and higher
// for higher scores, so scarce capacity goes to the higher-priority jobs of the class.
constexpr double kUnplacedPenalty = 1e13;
// Rows beyond this make the flow slow (one Dijkstra per augmentation); costs are then
// bucketed more coarsely until the rows fit.
constexpr int kMaxFlowRows = 256;

// Decides every job in `jobs` (indexes into `options`, all of one class) and updates
// `capacity`. `results` is indexed like `options`.
void PlaceClass(const std::vector<int>& jobs, const JobOptions& options, Capacity& capacity,
                Timestamp now, const PolicyConfig& config, std::vector<JobResult>& results);

}  // namespace frugal::policy
