// The cluster engine of experiment 4: many jobs from a production trace on reserved nodes,
// elastic on-demand nodes and elastic spot nodes in zones whose availability and price
// come from the spot traces. Stepped per minute; a ClusterPolicy (a baseline, or Frugal
// through the real placement/cost policy) acts through the engine's small API, as the
// real engine applies a Plan.
//
// Rules: a node is billed per second (per minute step here) from its launch to its release
// or reclaim (startup included), per GPU; reserved GPUs are a fixed cost for the window
// whether used or not. A zone that goes down reclaims every node in it at once: checkpointed
// jobs resume from their latest checkpoint (plus a restore), restartable jobs start over.
// Money is double dollars (a benchmark estimate, not a ledger; see single_job_sim.h).
#pragma once

#include <string>
#include <vector>

#include "bench/sim/market.h"
#include "scheduler/model/job.h"
#include "scheduler/model/pool.h"

namespace frugal::sim {

struct ClusterJob {
  int id = 0;
  std::string qos;
  int arrival = 0;     // minute
  int work = 1;        // minutes of running (speed 1)
  int gpus = 1;
  int rank = 2;        // priority rank (0 = highest)
  model::Tolerance tolerance = model::Tolerance::kRestartable;
  int checkpoint = 0;  // minutes of running between checkpoints (checkpointed only)
  int deadline = 0;    // minute
  // Simulation state.
  enum class State { kFuture, kPending, kRunning, kDone } state = State::kFuture;
  int progress = 0, saved = 0;  // minutes of work done / at the latest checkpoint
  int node = -1;                // while running
  int attempt_start = 0, restore_left = 0, run_in_attempt = 0, attempts = 0;
  int last_checkpoint = -1;     // minute
  int last_priority_stop = -1;  // minute
  int first_start = -1, finish = -1;
  double lost_gpu_minutes = 0;
};

struct ClusterPool {
  int id = 0;
  std::string name;
  model::CapacityKind kind = model::CapacityKind::kOnDemand;
  double price = 0;  // USD per GPU-hour (spot: from its zone, per step)
  int zone = -1;     // spot: index into the market's zones
  int cap_gpus = 0;  // spot: most GPUs the zone lends at once; 0 = unbounded
};

struct ClusterNode {
  int id = 0;
  int pool = 0;
  int gpus = 0;
  int free = 0;
  int launched = 0, live_at = 0;  // minutes
  bool live = false;
  int for_job = -1;      // a node launched for one job (baselines): released when it leaves
  int idle_since = 0;    // minute it last became empty
  double cost = 0;
};

struct ClusterSetup {
  std::vector<ClusterJob> jobs;  // by arrival
  Market spot;                   // zones of the spot pools; step = market step
  int reserved_gpus = 0, reserved_node_gpus = 8;
  double od_price = 3.06, reserved_price = 1.836;  // USD per GPU-hour
  int spot_cap_gpus = 32;  // per zone
  int startup = 3;         // minutes from launch to a live node
  int restore = 3;         // minutes to resume a checkpointed job
  int max_node_gpus = 8;
  int window = 0;          // minutes: the reserved commitment is paid for this long
  bool use_reserved = true;
};

class Cluster;

class ClusterPolicy {
 public:
  virtual ~ClusterPolicy() = default;
  virtual std::string Name() const = 0;
  virtual bool UsesReserved() const { return true; }
  // One scheduling cycle at cluster.now().
  virtual void Cycle(Cluster& cluster) = 0;
};

struct ClusterResult {
  std::string policy;
  double cost = 0, od_cost = 0, spot_cost = 0, reserved_cost = 0;
  double reserved_used_gpu_hours = 0, reserved_utilisation = 0;
  double lost_gpu_hours = 0, mean_wait_minutes = 0;
  int reclaims = 0, jobs = 0, unfinished = 0;
  std::vector<std::string> classes;  // QoS classes, sorted
  std::vector<int> class_jobs, class_hits;
};

class Cluster {
 public:
  explicit Cluster(const ClusterSetup& setup, bool use_reserved);
  ClusterResult Run(ClusterPolicy& policy);

  // What policies see.
  int now() const { return now_; }
  const ClusterSetup& setup() const { return setup_; }
  const std::vector<ClusterJob>& jobs() const { return jobs_; }
  const std::vector<ClusterPool>& pools() const { return pools_; }
  const std::vector<ClusterNode>& nodes() const { return nodes_; }  // present (not released)
  const std::vector<int>& pending() const { return pending_; }      // job indexes, by arrival
  bool ZoneUp(int zone) const;
  int MarketStep() const;  // the spot market's step now
  double PoolPrice(int pool) const;
  int PoolGpus(int pool, bool launching_only) const;  // GPUs of its present nodes
  // Reclaims and node-hours so far in a spot pool (what the store learns its rate from).
  double PoolReclaims(int pool) const { return reclaims_[pool]; }
  double PoolNodeHours(int pool) const { return node_hours_[pool]; }

  // What policies do. Each returns false (and does nothing) when it is not possible.
  bool Start(int job, int node_id);          // a pending job on a live node with room
  bool Stop(int job, bool priority);         // a running job back to pending (checkpointing)
  int Launch(int pool, int gpus, int for_job = -1);  // node id, or -1 (zone down / cap)
  bool Release(int node_id);                 // an empty node goes away

 private:
  ClusterNode* Node(int id);
  void EndAttempt(ClusterJob& j, bool keep_progress);
  void RemoveNode(int id);
  void Step();

  ClusterSetup setup_;
  std::vector<ClusterJob> jobs_;
  std::vector<ClusterPool> pools_;
  std::vector<ClusterNode> nodes_;
  std::vector<int> pending_;
  std::vector<double> reclaims_, node_hours_;
  int now_ = 0, next_node_ = 1, next_arrival_ = 0, done_ = 0, reclaim_count_ = 0;
  double od_cost_ = 0, spot_cost_ = 0, reserved_used_ = 0;
  bool event_ = false;
};

}  // namespace frugal::sim
