#include "scheduler/policy/placement/free_room.h"

#include <algorithm>
#include <climits>
#include <iterator>
#include <tuple>

#include "scheduler/policy/placement/cost_model.h"

namespace frugal::policy {

namespace {
constexpr long long kUncapped = LLONG_MAX / 4;
}  // namespace

FreeRoom::FreeRoom(const model::Snapshot& s, const PolicyConfig& config) {
  std::vector<const model::Pool*> pools;
  for (const auto& p : s.pools) pools.push_back(&p);
  std::sort(pools.begin(), pools.end(), [](auto* a, auto* b) { return a->id < b->id; });
  for (const auto* p : pools) {
    if (entry_of_pool_.count(p->id)) continue;  // duplicate ids: the first wins
    int account = static_cast<int>(account_cap_.size());
    account_cap_.push_back(p->max_gpus > 0 ? p->max_gpus : kUncapped);
    entry_of_pool_[p->id] = static_cast<int>(entries_.size());
    entries_.push_back({*p, false, account, 0, kNoLimit});
  }

  std::vector<const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->id < b->id; });
  std::map<std::tuple<model::PoolId, std::string, int>, int> odd_entries;
  for (const auto* n : nodes) {
    if (node_index_.count(n->id)) continue;
    int e;
    auto known = entry_of_pool_.find(n->pool_id);
    bool matches = known != entry_of_pool_.end() &&
                   entries_[known->second].pool.gpu_type == n->gpu_type &&
                   entries_[known->second].pool.gpu_mem_gb == n->gpu_mem_gb;
    if (matches) {
      e = known->second;
    } else {
      auto key = std::make_tuple(n->pool_id, n->gpu_type, n->gpu_mem_gb);
      auto it = odd_entries.find(key);
      if (it != odd_entries.end()) {
        e = it->second;
      } else {
        PoolEntry d;
        if (known != entry_of_pool_.end()) {
          d = entries_[known->second];  // same pool and cap, the node's own type
        } else {
          d.pool.id = n->pool_id;
          d.pool.name = "pool-" + std::to_string(n->pool_id);
          d.account = static_cast<int>(account_cap_.size());
          account_cap_.push_back(kUncapped);
        }
        d.pool.gpu_type = n->gpu_type;
        d.pool.gpu_mem_gb = n->gpu_mem_gb;
        d.pool.elastic = false;
        d.derived = true;
        e = static_cast<int>(entries_.size());
        entries_.push_back(d);
        odd_entries[key] = e;
      }
    }
    node_index_[n->id] = static_cast<int>(nodes_.size());
    nodes_.push_back({n, e, std::max(0, n->gpus), false, n->under_notice});
  }

  size_t accounts = account_cap_.size();
  account_used_.assign(accounts, 0);
  account_live_.assign(accounts, 0);
  account_new_.assign(accounts, 0);
  nodes_of_.assign(entries_.size(), {});
  by_free_.assign(entries_.size(), {});
  free_sum_.assign(entries_.size(), 0);

  for (const auto& r : s.running) {
    int idx = NodeIndex(r.node_id);
    if (idx < 0) continue;  // a lost node: its attempts end without our help
    NodeState& ns = nodes_[idx];
    int gpus = std::max(0, r.gpus);
    ns.free = std::max(0, ns.free - gpus);
    ns.busy = true;
    account_used_[entries_[ns.entry].account] += gpus;
    // When this pool is next expected to free GPUs: the wait option's horizon.
    double eta = 0;
    bool known = true;  // an attempt with no estimate of its own may hold its node for any time
    if (!r.stopping) {
      const model::Pool& pool = entries_[ns.entry].pool;
      Work w = WorkOf(r, config);
      known = w.estimated;
      Timestamp since = r.started_at;
      if (r.last_checkpoint_at) since = std::max(since, *r.last_checkpoint_at);
      eta = w.ref_hours / (pool.speed > 0 ? pool.speed : 1.0) - HoursBetween(since, s.now);
      if (eta <= 0) eta = Hours(config.overdue_eta);
    }
    auto& entry_eta = entries_[ns.entry].eta_hours;
    entry_eta = std::min(entry_eta, eta);
    ns.held_hours = std::max(ns.held_hours, known ? eta : kNoLimit);
  }
  for (int idx = 0; idx < static_cast<int>(nodes_.size()); ++idx) {
    NodeState& ns = nodes_[idx];
    PoolEntry& pe = entries_[ns.entry];
    account_live_[pe.account] += std::max(0, ns.node->gpus);
    nodes_of_[ns.entry].push_back(idx);
    int free = ns.free;
    ns.free = 0;
    if (ns.closed) continue;  // under notice: its GPUs are about to go
    pe.largest_node = std::max(pe.largest_node, ns.node->gpus);
    SetFree(idx, free);
  }
  for (auto& pe : entries_) {
    pe.returns = pe.pool.kind == model::CapacityKind::kSpot && !pe.derived && !pe.pool.elastic &&
                 pe.largest_node <= 0 && pe.pool.max_gpus > 0;
    if (pe.returns) pe.eta_hours = std::max(0.0, pe.pool.mean_outage_hours);
  }
}

bool FreeRoom::MayReturnFor(int e, int gpus, bool multi_node, int nodes) const {
  const PoolEntry& pe = entries_[e];
  if (!pe.returns || pe.pool.max_gpus < gpus) return false;
  if (nodes > 1)
    return (pe.pool.node_gpus <= 0 || gpus / nodes <= pe.pool.node_gpus) &&
           pe.pool.max_gpus >= NewGpusFor(e, gpus, nodes);
  return multi_node || pe.pool.node_gpus <= 0 || gpus <= pe.pool.node_gpus;
}

int FreeRoom::NodeIndex(model::NodeId id) const {
  auto it = node_index_.find(id);
  return it == node_index_.end() ? -1 : it->second;
}

void FreeRoom::SetFree(int idx, int free) {
  NodeState& ns = nodes_[idx];
  auto& buckets = by_free_[ns.entry];
  if (ns.free > 0) {
    auto it = buckets.find(ns.free);
    it->second.erase(idx);
    if (it->second.empty()) buckets.erase(it);
  }
  free_sum_[ns.entry] += free - ns.free;
  ns.free = free;
  if (free > 0 && !ns.closed) buckets[free].insert(idx);
}

int FreeRoom::EntryOfPool(model::PoolId id) const {
  auto it = entry_of_pool_.find(id);
  return it == entry_of_pool_.end() ? -1 : it->second;
}

int FreeRoom::Headroom(int e) const {
  int a = entries_[e].account;
  return static_cast<int>(
      std::clamp(account_cap_[a] - account_used_[a], 0LL, static_cast<long long>(INT_MAX)));
}

int FreeRoom::FreeGpus(int e) const { return std::min(free_sum_[e], Headroom(e)); }

int FreeRoom::Usable(int e, int gpus, bool multi_node, int nodes) const {
  if (gpus <= 0) return 0;
  int head = Headroom(e) / gpus * gpus;
  if (nodes > 1) {
    // Parts that fit, and nodes that fit one: a bound (gangs need distinct nodes), exact
    // when no node holds more parts than there are gangs. Take decides for real.
    const int per = gpus / nodes;
    long long parts = 0, hosts = 0;
    for (auto it = by_free_[e].lower_bound(per); it != by_free_[e].end(); ++it) {
      parts += static_cast<long long>(it->second.size()) * (it->first / per);
      hosts += static_cast<long long>(it->second.size());
    }
    if (hosts < nodes) return 0;
    return static_cast<int>(std::min<long long>(parts / nodes * gpus, head));
  }
  if (gpus > entries_[e].largest_node) {
    return multi_node ? std::min(free_sum_[e] / gpus * gpus, head) : 0;
  }
  long long usable = 0;
  for (auto it = by_free_[e].lower_bound(gpus); it != by_free_[e].end(); ++it) {
    usable += static_cast<long long>(it->second.size()) * (it->first / gpus) * gpus;
  }
  return static_cast<int>(std::min<long long>(usable, head));
}

int FreeRoom::NewCapacity(int e) const {
  const PoolEntry& pe = entries_[e];
  if (pe.derived || !pe.pool.elastic || pe.pool.max_gpus <= 0) return 0;
  long long room = pe.pool.max_gpus - account_live_[pe.account] - account_new_[pe.account];
  return static_cast<int>(std::clamp(room, 0LL, static_cast<long long>(INT_MAX)));
}

void FreeRoom::UseNew(int e, int gpus) { account_new_[entries_[e].account] += gpus; }

int FreeRoom::NewGpusFor(int e, int gpus, int nodes, int held) const {
  const int node = entries_[e].pool.node_gpus;
  if (nodes <= 1) return gpus;
  const int parts = std::max(0, nodes - held);
  return parts * (node <= 0 ? gpus / nodes : std::max(node, gpus / nodes));
}

int FreeRoom::PartsFree(int e, int gpus, int nodes) const {
  if (nodes <= 1 || gpus <= 0) return 0;
  const int per = gpus / nodes;
  int hosts = 0;
  for (auto it = by_free_[e].lower_bound(per); it != by_free_[e].end() && hosts < nodes - 1; ++it)
    hosts += static_cast<int>(std::min<size_t>(it->second.size(), nodes - 1 - hosts));
  return std::min(hosts, Headroom(e) / std::max(1, per));
}

void FreeRoom::HoldParts(int e, int gpus, int nodes, int parts) {
  if (nodes <= 1 || parts <= 0) return;
  const int per = gpus / nodes;
  std::vector<int> chosen;  // chosen before any is held, as Take does
  for (auto it = by_free_[e].lower_bound(per);
       it != by_free_[e].end() && static_cast<int>(chosen.size()) < parts; ++it) {
    for (int idx : it->second) {
      chosen.push_back(idx);
      if (static_cast<int>(chosen.size()) == parts) break;
    }
  }
  for (int idx : chosen) {
    SetFree(idx, nodes_[idx].free - per);
    nodes_[idx].busy = true;
    nodes_[idx].held_hours = kNoLimit;
  }
  account_used_[entries_[e].account] += static_cast<long long>(chosen.size()) * per;
}

bool FreeRoom::CanHost(int e, int gpus, bool multi_node, int nodes) const {
  const PoolEntry& pe = entries_[e];
  if (nodes > 1) {
    // Live nodes (not under notice) that each hold a part, or new ones the pool may add.
    const int per = gpus / nodes, node = pe.pool.node_gpus;
    int hosts = 0;
    for (int idx : nodes_of_[e])
      if (!nodes_[idx].closed && nodes_[idx].node->gpus >= per) ++hosts;
    if (hosts >= nodes) return true;
    return (node <= 0 || per <= node) && NewCapacity(e) >= NewGpusFor(e, gpus, nodes);
  }
  if (pe.largest_node >= gpus || (multi_node && pe.largest_node > 0)) return true;
  int node = pe.pool.node_gpus;
  return NewCapacity(e) >= gpus && (node <= 0 || gpus <= node || multi_node);
}

std::vector<FreeRoom::Slice> FreeRoom::Take(int e, int gpus, bool multi_node, int nodes) {
  return Take(e, gpus, multi_node, nodes, Stay{});
}

std::vector<FreeRoom::Slice> FreeRoom::Take(int e, int gpus, bool multi_node, int nodes,
                                            const Stay& stay) {
  std::vector<Slice> out;
  if (gpus <= 0 || Headroom(e) < gpus || free_sum_[e] < gpus) return out;
  auto& buckets = by_free_[e];
  if (nodes > 1) {
    // Best fit per part, as for one node: the fullest nodes that still fit gpus / nodes,
    // lowest id first, each node at most once. Chosen before any is taken.
    const int per = gpus / nodes;
    std::vector<int> chosen;
    for (auto it = buckets.lower_bound(per);
         it != buckets.end() && static_cast<int>(chosen.size()) < nodes; ++it) {
      for (int idx : it->second) {
        chosen.push_back(idx);
        if (static_cast<int>(chosen.size()) == nodes) break;
      }
    }
    if (static_cast<int>(chosen.size()) < nodes) return out;
    for (int idx : chosen) {
      SetFree(idx, nodes_[idx].free - per);
      nodes_[idx].busy = true;
      nodes_[idx].held_hours = kNoLimit;  // gangs are not judged: their run is not asked
      out.push_back({nodes_[idx].node->id, per});
    }
  } else if (gpus <= entries_[e].largest_node) {
    int idx = PickNode(e, gpus, stay);
    if (idx < 0) return out;
    SetFree(idx, nodes_[idx].free - gpus);
    nodes_[idx].busy = true;
    // A job placed with no known run may hold the node for any time.
    nodes_[idx].held_hours =
        std::max(nodes_[idx].held_hours, stay.run_hours > 0 ? stay.run_hours : kNoLimit);
    out.push_back({nodes_[idx].node->id, gpus});
  } else {
    if (!multi_node) return out;
    // Fewest nodes: the emptiest whole nodes first, then the best fit for the remainder.
    // Cannot fail half way: the entry has at least `gpus` free in total (checked above).
    int need = gpus;
    while (need > 0) {
      auto fit = buckets.lower_bound(need);
      auto it = fit != buckets.end() ? fit : std::prev(buckets.end());
      int idx = *it->second.begin();
      int take = std::min(need, it->first);
      SetFree(idx, nodes_[idx].free - take);
      nodes_[idx].busy = true;
      nodes_[idx].held_hours = kNoLimit;
      out.push_back({nodes_[idx].node->id, take});
      need -= take;
    }
  }
  account_used_[entries_[e].account] += gpus;
  return out;
}

int FreeRoom::PickNode(int e, int gpus, const Stay& stay) {
  const auto& buckets = by_free_[e];
  auto it = buckets.lower_bound(gpus);
  if (it == buckets.end()) return -1;
  if (!ReleasedWhenIdle(entries_[e].pool) || stay.run_hours <= 0) return *it->second.begin();
  // Best-fit order, the first node that idles nothing wins; a bounded scan keeps a pool of
  // 10k nodes O(log n) per job (past it, the fewest idle GPU-hours seen so far).
  constexpr int kScan = 64;
  int best = -1, scanned = 0;
  double best_idle = 0;
  std::vector<int> seen;
  for (; it != buckets.end() && scanned < kScan; ++it) {
    for (int idx : it->second) {
      const NodeState& ns = nodes_[idx];
      double past = std::max(0.0, stay.run_hours - ns.held_hours);
      double idle = std::max(0, ns.node->gpus - gpus) * past;
      if (best < 0 || idle < best_idle) best = idx, best_idle = idle;
      seen.push_back(idx);
      if (best_idle <= 0 || ++scanned == kScan) break;
    }
    if (best_idle <= 0 && best >= 0) break;
  }
  // Past the scan a node that idles nothing may remain unseen: never decline then.
  if (best_idle <= stay.max_idle_gpu_hours || scanned == kScan) return best;
  // A node sized to the job is cheaper than any of these: a growing pool may give them back.
  for (int idx : seen) nodes_[idx].declined = true;
  return -1;
}

bool FreeRoom::NodeDeclined(model::NodeId node) const {
  int idx = NodeIndex(node);
  return idx >= 0 && nodes_[idx].declined;
}

void FreeRoom::Close(model::NodeId node) {
  int idx = NodeIndex(node);
  if (idx < 0) return;
  SetFree(idx, 0);
  nodes_[idx].closed = true;
  nodes_[idx].busy = true;
}

bool FreeRoom::NodeClosed(model::NodeId node) const {
  int idx = NodeIndex(node);
  return idx < 0 || nodes_[idx].closed;
}

const model::Node* FreeRoom::NodeById(model::NodeId node) const {
  int idx = NodeIndex(node);
  return idx < 0 ? nullptr : nodes_[idx].node;
}

int FreeRoom::EntryOfNode(model::NodeId node) const {
  int idx = NodeIndex(node);
  return idx < 0 ? -1 : nodes_[idx].entry;
}

int FreeRoom::NodeFree(model::NodeId node) const {
  int idx = NodeIndex(node);
  return idx < 0 ? 0 : nodes_[idx].free;
}

bool FreeRoom::NodeBusy(model::NodeId node) const {
  int idx = NodeIndex(node);
  return idx >= 0 && nodes_[idx].busy;
}

}  // namespace frugal::policy
