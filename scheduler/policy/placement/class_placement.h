// Placement of one priority class on the capacity left by the classes above it.
// Jobs with the same gang size, the same options with room and the same cost profile are
// aggregated into rows of a min-cost max-flow over pools (min_cost_flow.h), with one source
// arc per priority tier so higher scores get capacity first and money decides among equals.
// The flow's GPUs per row and pool are rounded down to whole gangs, gangs are bin-packed
// onto nodes (largest first, best fit), and what rounding or packing left over, plus the
// jobs that would rather wait for cheaper capacity, are placed greedily in score order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "scheduler/policy/placement/free_room.h"
#include "scheduler/policy/placement/ready_jobs.h"

namespace frugal::policy {

enum class PlacementOutcome {
  kNone,
  kPlaced,       // slices on live nodes of OptionEntry(option)
  kNewNode,      // waits for a node the provider adds to OptionEntry(option)
  kWaitCheaper,  // chose to wait for `option` (no room now) instead of paying for `alt_option`
  kNoCapacity,   // allowed somewhere, but nothing has room: a preemption candidate
  kNoOption,     // no pool may ever run it (type, tolerance, deadline)
};

struct JobResult {
  PlacementOutcome outcome = PlacementOutcome::kNone;
  int option = -1;
  int alt_option = -1;
  std::vector<FreeRoom::Slice> slices;
  double eta_hours = 0;  // kWaitCheaper: when `option` is expected to have room
  int new_gpus = 0;      // kNewNode: GPUs of new nodes it waits for
  int held_parts = 0;    // kNewNode, a gang: parts held on live nodes meanwhile
};

// Cost per GPU of leaving a job unplaced when waiting is not its choice: above any rate.
constexpr double kUnplacedPenalty = 1e13;
// Source-arc cost per priority tier below the top (7 - tier): above any difference in
// money a path can make, so capacity goes to higher tiers first and money decides within.
constexpr std::int64_t kTierStep = 1'000'000'000'000;
// Rows beyond this make the flow slow (one Dijkstra per augmentation); rows are then
// bucketed more coarsely until they fit.
constexpr int kMaxFlowRows = 256;
constexpr size_t kMaxArcsPerRow = 6;

// Decides every job in `jobs` (indexes into `options`, all of one class) and updates
// `capacity`. `results` is indexed like `options`.
void PlaceClass(const std::vector<int>& jobs, const ReadyJobs& options, FreeRoom& capacity,
                Timestamp now, const PolicyConfig& config, std::vector<JobResult>& results);

}  // namespace frugal::policy
