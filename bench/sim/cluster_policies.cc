#include "bench/sim/cluster_policies.h"

#include <algorithm>
#include <climits>
#include <cmath>

namespace frugal::sim {

namespace {

constexpr int kOnDemandPoolIndex = 1;  // Cluster pool 1

// The node launched for `job`, or nullptr.
const ClusterNode* OwnNode(const Cluster& c, int job) {
  for (const auto& n : c.nodes())
    if (n.for_job == job) return &n;
  return nullptr;
}

// Starts `job` on its own node when that is live; true if the job has one (live or not).
bool UseOwnNode(Cluster& c, int job) {
  const ClusterNode* n = OwnNode(c, job);
  if (!n) return false;
  if (n->live) c.Start(job, n->id);
  return true;
}

// Best fit on a reserved node: the one with the least room that still fits.
bool StartOnReserved(Cluster& c, int job) {
  const int gpus = c.jobs()[job].gpus;
  int best = -1, best_free = INT_MAX;
  for (const auto& n : c.nodes())
    if (c.pools()[n.pool].kind == model::CapacityKind::kReserved && n.live && n.free >= gpus &&
        n.free < best_free)
      best = n.id, best_free = n.free;
  return best >= 0 && c.Start(job, best);
}

}  // namespace

void AllOnDemandCluster::Cycle(Cluster& c) {
  std::vector<int> pending = c.pending();
  for (int j : pending)
    if (!UseOwnNode(c, j)) c.Launch(kOnDemandPoolIndex, c.jobs()[j].gpus, j);
}

void SlurmLikeCluster::Cycle(Cluster& c) {
  std::vector<int> pending = c.pending();
  for (int j : pending) {
    if (UseOwnNode(c, j) || StartOnReserved(c, j)) continue;
    c.Launch(kOnDemandPoolIndex, c.jobs()[j].gpus, j);
  }
}

void SkyPilotLikeCluster::Cycle(Cluster& c) {
  std::vector<int> pending = c.pending();
  for (int j : pending) {
    if (UseOwnNode(c, j) || StartOnReserved(c, j)) continue;
    const ClusterJob& job = c.jobs()[j];
    int node = -1;
    if (job.tolerance != model::Tolerance::kNone) {
      // Zones by current price, cheapest first; Launch refuses a zone that is down or full.
      std::vector<std::pair<double, int>> zones;
      for (const auto& p : c.pools())
        if (p.zone >= 0) zones.push_back({c.PoolPrice(p.id), p.id});
      std::sort(zones.begin(), zones.end());
      for (auto [price, pool] : zones)
        if ((node = c.Launch(pool, job.gpus, j)) >= 0) break;
    }
    if (node < 0) c.Launch(kOnDemandPoolIndex, job.gpus, j);
  }
}

}  // namespace frugal::sim
