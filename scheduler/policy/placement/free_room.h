// Free capacity during one Decide: live nodes bucketed by free GPUs per pool, so that
// best-fit placement (keep whole nodes free for big gangs) is O(log n) per job even with
// 10k nodes. Not thread-safe; one instance per Decide call.
#pragma once

#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "scheduler/model/snapshot.h"
#include "scheduler/policy/placement/cost_model.h"
#include "scheduler/policy/policy_config.h"

namespace frugal::policy {

// A placement target. Usually one per pool; a node whose GPU type or memory differs from
// its pool's, or whose pool is missing from the snapshot, gets an entry of its own
// (derived from the pool, or an uncapped on-demand pool at price 0) so it is never
// mistaken for capacity of another type.
struct PoolEntry {
  model::Pool pool;
  bool derived = false;     // synthesised: never asked to grow
  int account = 0;          // entries of one pool id share the pool's max_gpus
  int largest_node = 0;     // GPUs of its biggest live node
  double eta_hours = 1e18;  // expected time until some running work here ends
  // A spot pool with no live node that its provider does not grow on request: its nodes
  // come back by themselves when the zone has capacity again: eta_hours is the pool's
  // learned mean outage (0 when unknown), and the wait is re-decided every cycle.
  bool returns = false;
};

// A pool whose nodes are billed while held and given back once idle past its timeout.
// Reserved capacity is paid whether it idles or not; with no timeout nodes are kept.
inline bool ReleasedWhenIdle(const model::Pool& pool) {
  return pool.kind != model::CapacityKind::kReserved && pool.idle_timeout.count() > 0;
}

class FreeRoom {
 public:
  FreeRoom(const model::Snapshot& snapshot, const PolicyConfig& config);

  struct Slice {
    model::NodeId node = 0;
    int gpus = 0;
  };

  int size() const { return static_cast<int>(entries_.size()); }
  const PoolEntry& entry(int i) const { return entries_[i]; }
  // Entry of a pool id as listed in the snapshot, or -1.
  int EntryOfPool(model::PoolId id) const;

  // Free GPUs on the entry's live nodes (not under notice), capped by max_gpus.
  int FreeGpus(int e) const;
  // Every gang method takes the job's `nodes`: 1 is a job on one node, or (with
  // `multi_node`, PolicyConfig::spread_large_jobs) one spread unevenly over as few nodes as
  // hold it when it is bigger than any node. `nodes` > 1 is a multi-node gang of exactly
  // that many distinct nodes with gpus / nodes GPUs each (decision 0032); `multi_node`
  // does not apply to it.

  // GPUs gangs of `gpus` can use: whole gangs per node, or pooled across nodes when the gang
  // is bigger than any node and multi-node gangs are allowed.
  int Usable(int e, int gpus, bool multi_node, int nodes = 1) const;
  // GPUs the provider may still add (elastic pools below max_gpus), in-flight requests included.
  int NewCapacity(int e) const;
  void UseNew(int e, int gpus);  // `gpus` of NewCapacity promised to jobs this cycle
  // GPUs of NewCapacity a gang needs: `gpus`, or for `nodes` > 1 whole new nodes, one per
  // part (a node of the pool's node_gpus holds one part of a gang, never two), less the
  // `held` parts it already holds on live nodes (HoldParts).
  int NewGpusFor(int e, int gpus, int nodes, int held = 0) const;
  // A multi-node gang that waits for new nodes holds the live nodes that fit a part now
  // (at most nodes - 1, best fit, one part per node), so no job placed after it this cycle
  // takes them while the rest start: the first of N new nodes is not lost to a smaller job
  // and the gang asks only for the nodes it lacks. PartsFree counts them; HoldParts holds
  // that many (their GPUs count as used; the nodes are busy, so never released as idle).
  int PartsFree(int e, int gpus, int nodes) const;
  void HoldParts(int e, int gpus, int nodes, int parts);
  // True if the entry could ever hold a gang of `gpus`: on its live nodes, or on nodes its
  // provider may still add.
  bool CanHost(int e, int gpus, bool multi_node, int nodes = 1) const;
  // True if the entry `returns` and a gang of `gpus` fits it once its nodes are back.
  bool MayReturnFor(int e, int gpus, bool multi_node, int nodes = 1) const;

  // How long a job placed on one node is expected to hold it. On a pool whose nodes are
  // billed while held and given back when idle, a job that outlasts the other work on its
  // node keeps the node's other GPUs paid and idle until it ends (decision 0033).
  struct Stay {
    double run_hours = 0;  // 0: unknown; best fit alone chooses
    // Refuse every node that would idle more GPU-hours than this for the job (the cost of
    // a node sized to the job instead); kNoLimit: any node that fits.
    double max_idle_gpu_hours = kNoLimit;
  };

  // Places a gang: best fit on one node (the fullest that still fits, lowest id), or across
  // nodes of this entry when bigger than any node; a multi-node gang on the `nodes` fullest
  // nodes that each still fit a part. All or nothing: empty if it does not fit.
  // With a `stay` on a billed pool, a one-node job goes where it keeps the fewest GPUs idle
  // past the node's other work (best fit among equals), or nowhere if that is more than
  // stay.max_idle_gpu_hours.
  std::vector<Slice> Take(int e, int gpus, bool multi_node, int nodes, const Stay& stay);
  std::vector<Slice> Take(int e, int gpus, bool multi_node, int nodes = 1);
  // Nothing more lands on this node this cycle (its GPUs are kept for a preemptor).
  void Close(model::NodeId node);

  // Node facts. `node` must be a live node of the snapshot (else 0 / -1 / nullptr).
  const model::Node* NodeById(model::NodeId node) const;
  int EntryOfNode(model::NodeId node) const;
  int NodeFree(model::NodeId node) const;
  bool NodeBusy(model::NodeId node) const;    // any attempt running, stopping or assigned
  bool NodeClosed(model::NodeId node) const;  // under notice or kept for a preemptor
  // A job of this cycle fit on the node but would have kept too much of it idle (Stay).
  bool NodeDeclined(model::NodeId node) const;
  const std::vector<int>& NodesOf(int e) const { return nodes_of_[e]; }  // node indexes
  const model::Node& NodeAt(int idx) const { return *nodes_[idx].node; }

 private:
  struct NodeState {
    const model::Node* node = nullptr;
    int entry = 0;
    int free = 0;
    bool busy = false;
    bool closed = false;
    // Hours until the work on it is expected to end (kNoLimit: some of it has no estimate).
    double held_hours = 0;
    bool declined = false;
  };
  void SetFree(int idx, int free);
  // The node a one-node job of `gpus` goes to, or -1 (see Take).
  int PickNode(int e, int gpus, const Stay& stay);
  int Headroom(int e) const;
  int NodeIndex(model::NodeId id) const;

  std::vector<PoolEntry> entries_;
  std::map<model::PoolId, int> entry_of_pool_;
  std::vector<NodeState> nodes_;  // ordered by node id
  std::unordered_map<model::NodeId, int> node_index_;
  std::vector<std::vector<int>> nodes_of_;             // per entry
  std::vector<std::map<int, std::set<int>>> by_free_;  // per entry: free -> node indexes
  std::vector<int> free_sum_;                          // per entry
  // Per account (pool id): max_gpus, GPUs in use or assigned, live GPUs, growth promised.
  std::vector<long long> account_cap_, account_used_, account_live_, account_new_;
};

}  // namespace frugal::policy
