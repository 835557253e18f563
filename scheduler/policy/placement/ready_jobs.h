// Where each ready job may run and at what marginal cost: one row per job of options
// (entry x {on a live node now, on a node the provider adds}), with the deadline guard and
// the tolerance rule already applied, plus its priority. Computed once per Decide.
#pragma once

#include <string>
#include <vector>

#include "scheduler/model/snapshot.h"
#include "scheduler/policy/placement/free_room.h"
#include "scheduler/policy/placement/cost_model.h"
#include "scheduler/policy/placement/priority.h"
#include "scheduler/policy/placement/spot_book.h"

namespace frugal::policy {

// An option is an index o in [0, 2 x entries): entry o / 2, on a new node when o is odd.
inline int OptionEntry(int o) { return o / 2; }
inline bool OptionIsNew(int o) { return (o & 1) != 0; }

struct JobView {
  const model::PendingJob* job = nullptr;
  Work work;
  // The rules' view of the deadline, or the controller's (its margin, DeadlineGuard::
  // kController) where the learned controller decides the job (decision 0045).
  DeadlineView deadline;
  PriorityFactors priority;
  int tier = 0;                // priority score in 8 steps (0 lowest): the unplaced penalty
  bool any_type_fits = false;  // some entry has the GPU type and memory asked for
  bool late = false;           // `deadline` cannot be met anywhere: earliest finish wins
  // The learned controller's verdict per spot entry (issue 14), where it applies: entry
  // index and decision. Spot or wait on any of them closes the paid safe options.
  std::vector<std::pair<int, SpotDecision>> learned;
  bool learned_prefers_spot = false;
};

// The safe alternative's price per GPU per reference hour for a job that fits `fits`: the
// cheapest on-demand pool (0: none).
double OnDemandRefPrice(const FreeRoom& capacity, const std::vector<char>& fits);
// The learned decision for pending deadline job `v` on spot entry `spot`, judged by
// `view` (its deadline with the controller's margin, DeadlineGuard::kController), or empty.
std::optional<SpotDecision> LearnedFor(const SpotBook& book, const JobView& v,
                                       const DeadlineView& view, const PoolEntry& spot,
                                       double od_ref_price, const PolicyConfig& config);

// Option rates of every job, flat: rate(j, o) < 0 means "not allowed".
class ReadyJobs {
 public:
  // `book`: the learned spot controller's tables; null decides by the rules alone.
  ReadyJobs(const model::Snapshot& snapshot, const FreeRoom& capacity, const PolicyConfig& config,
             const SpotBook* book = nullptr);

  int jobs() const { return static_cast<int>(views_.size()); }
  int options() const { return options_; }
  const JobView& view(int j) const { return views_[j]; }
  float rate(int j, int o) const { return rates_[static_cast<size_t>(j) * options_ + o]; }
  // The estimate behind rate(j, o) (recomputed: only reasons need it).
  Estimate EstimateFor(int j, int o) const;
  // Nodes a gang of this job spans for option o.
  int Nodes(int j, int o) const;

 private:
  const FreeRoom& capacity_;
  const PolicyConfig& config_;
  int options_ = 0;
  std::vector<JobView> views_;
  std::vector<float> rates_;
};

// Extra cost per unit on a node that does not exist yet: existing capacity wins ties.
constexpr double kNewNodeFactor = 1.01;
// Rate of a job that will be late anyway, per hour until it finishes and per reference
// hour of work (so it does not depend on the job's length): the earliest finish wins.
constexpr double kLateRatePerHour = 1e9;
constexpr double kMaxRate = 1e11;  // rates stay far below class_placement's tier step

}  // namespace frugal::policy
