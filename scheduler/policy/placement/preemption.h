// Priority preemption for placement/cost: when a job of class k has no room anywhere it
// may run, stop running jobs of lower classes (rank > k) on one node to make room. Victims
// are the ones that lose the least work since their latest checkpoint and are cheapest to
// restart; jobs that ran less than min_run_time, tolerance none, and jobs already preempted
// by priority without a checkpoint since are spared (no storms). At most
// max_preemptions_per_cycle victims per Decide. Single-node gangs only.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <vector>

#include "scheduler/model/snapshot.h"
#include "scheduler/policy/placement/free_room.h"
#include "scheduler/policy/placement/ready_jobs.h"

namespace frugal::policy {

class Preemptor {
 public:
  // Indexes the running attempts once; `capacity` is shared with placement. `stopped`:
  // stops already in this cycle's plan (migrations), treated like outstanding stop orders.
  Preemptor(const model::Snapshot& snapshot, const PolicyConfig& config, FreeRoom& capacity,
            const std::vector<model::Stop>& stopped);

  struct Room {
    enum Kind { kNone, kStopping, kPreempting } kind = kNone;
    model::NodeId node = 0;
    std::vector<model::Stop> stops;          // kPreempting: one per victim attempt
    std::vector<model::AttemptId> stopping;  // kStopping: attempts already on their way out
  };

  // Finds room for job `j` on one node where it has an option now. Either GPUs that
  // attempts already told to stop will free (kStopping), or new victims (kPreempting). The
  // node is then closed to everything else this cycle, so the room stays kept.
  Room MakeRoom(const ReadyJobs& options, int j);

  // For a job MakeRoom found no room for: the earliest time lower-class jobs still inside
  // their protection window (min_run_time) could be preempted to make room on one node,
  // and which. Nothing when no node would have room even then. Read-only.
  struct Later {
    Timestamp at{};
    std::vector<model::JobId> jobs;
    Seconds protection{0};  // the longest protection window among them
  };
  std::optional<Later> WhenRoom(const ReadyJobs& options, int j) const;

 private:
  struct Victim {
    model::JobId job_id = 0;
    int rank = 0;
    std::vector<int> attempts;  // indexes into snapshot.running
    VictimCost cost;
    bool eligible = true;
    bool used = false;
    // Not eligible only for its protection window: eligible from this time on.
    std::optional<Timestamp> eligible_at;
    Seconds protection{0};
    bool never = false;  // some part is held for a reason that time does not end
  };
  struct OnNode {
    int victim = 0;
    int gpus = 0;
  };
  bool TryStopping(const ReadyJobs& options, int j, const std::vector<int>& entries, Room& room);
  bool Stopping(const model::RunningAttempt& r) const {
    return r.stopping || stopped_.count(r.attempt_id) > 0;
  }
  int SoonFree(model::NodeId node) const {
    auto it = soon_free_.find(node);
    return it == soon_free_.end() ? 0 : it->second;
  }

  const model::Snapshot& snapshot_;
  const PolicyConfig& config_;
  FreeRoom& capacity_;
  std::vector<Victim> victims_;
  std::map<model::NodeId, std::vector<OnNode>> on_node_;    // cheapest victim first
  std::map<model::NodeId, std::vector<OnNode>> later_on_node_;  // protected for now
  std::vector<std::vector<model::NodeId>> victim_nodes_;    // per entry
  std::vector<std::vector<model::NodeId>> stopping_nodes_;  // per entry
  std::set<model::AttemptId> stopped_;
  std::map<model::NodeId, int> soon_free_;  // GPUs of stopping attempts per node
  std::set<std::vector<int>> failed_;       // (rank, gpus, entries...) that found no victims
  std::set<std::vector<int>> no_stopping_;  // (gpus, entries...) with no stopping room
  mutable std::map<std::vector<int>, std::optional<Later>> when_room_;  // (gpus, rank, entries...)
  int budget_ = 0;
};

}  // namespace frugal::policy
