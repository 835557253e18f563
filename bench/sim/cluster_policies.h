// The schedulers of experiment 4: three baselines written here from their usual behaviour
// (all on-demand; Slurm-like reserved first then on-demand bursting, FIFO; SkyPilot-like
// greedy spot with on-demand fallback) and Frugal, the real placement/cost policy driven
// through a model::Snapshot of the simulated cluster.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "bench/sim/cluster_sim.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy.h"

namespace frugal::sim {

// Every job on its own on-demand node as soon as it arrives; no reserved capacity bought.
class AllOnDemandCluster final : public ClusterPolicy {
 public:
  std::string Name() const override { return "all-on-demand"; }
  bool UsesReserved() const override { return false; }
  void Cycle(Cluster& c) override;
};

// FIFO by arrival: the reserved node that fits best, else a node of its own on on-demand
// (cloud bursting). Never spot.
class SlurmLikeCluster final : public ClusterPolicy {
 public:
  std::string Name() const override { return "reserved+on-demand-fifo"; }
  void Cycle(Cluster& c) override;
};

// FIFO by arrival: reserved if a node fits; else, for a job that tolerates interruption, a
// spot node in the cheapest zone that is up and has room (relaunching there after a
// reclaim: the reclaiming zone is down); else on-demand. No deadline awareness.
class SkyPilotLikeCluster final : public ClusterPolicy {
 public:
  std::string Name() const override { return "greedy-spot+on-demand"; }
  void Cycle(Cluster& c) override;
};

// The real placement/cost policy: each cycle a Snapshot of the cluster (pools annotated as
// the provider would: elastic on-demand, elastic spot while its zone has capacity, the
// learned reclaim rate), Decide, and the Plan applied: stops, assignments, node requests
// (split into nodes of at most max_node_gpus), releases.
class FrugalCluster final : public ClusterPolicy {
 public:
  explicit FrugalCluster(std::unique_ptr<policy::Policy> policy, double prior_per_node_hour = 0.1)
      : policy_(std::move(policy)), prior_(prior_per_node_hour) {}
  std::string Name() const override { return "frugal"; }
  void Cycle(Cluster& c) override;
  model::Snapshot SnapshotOf(const Cluster& c) const;
  int cycles() const { return cycles_; }

 private:
  std::unique_ptr<policy::Policy> policy_;
  double prior_;
  int cycles_ = 0;
  std::map<int, int> starting_for_;  // job -> the node its provider started for it
  // Each spot zone's model per daily refit, (zone, fit end) -> model: kept here, with the
  // market this policy runs on, so every cycle between two refits shares its tables.
  mutable std::map<std::pair<int, int>, std::shared_ptr<const model::AvailabilityModel>> models_;
};

}  // namespace frugal::sim
