// Capacity: pools of one kind and GPU type, and the nodes (workers) registered in them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/money.h"
#include "common/status.h"
#include "scheduler/model/availability.h"

namespace frugal::model {

using PoolId = std::int64_t;

enum class CapacityKind { kReserved, kOnDemand, kSpot };
const char* ToString(CapacityKind k);
// A spot pool's reclaim rate per node-hour: the prior counts as kPriorNodeHours of
// observation, so a few early notices move it gradually (gamma-Poisson posterior mean).
inline constexpr double kPreemptionPriorNodeHours = 10.0;
double LearnedPreemptionRate(double prior_per_node_hour, double notices, double node_hours);
// A spot pool's mean outage (hours from losing its last node to having one again): the
// prior counts as one outage of kOutagePriorHours, so the first observed ones move it
// gradually. Used as the expected wait for a pool whose nodes come back by themselves.
inline constexpr double kOutagePriorHours = 1.0;
double LearnedOutageHours(double outages, double outage_hours);
StatusOr<CapacityKind> ParseCapacityKind(const std::string& s);

struct Pool {
  PoolId id = 0;
  std::string name;
  CapacityKind kind = CapacityKind::kOnDemand;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  double speed = 1.0;  // relative throughput; 1.0 = reference GPU
  Micros price_per_gpu_hour = 0;
  int max_gpus = 0;  // placement/cost: cap on GPUs in use and on growth; 0 = no cap, no growth
  // Issue 4 (placement/cost). Every field has a default so older code and rows still work.
  Seconds startup_delay{0};  // from asking the provider for a node to the node's first heartbeat
  // Spot: expected reclaims per node-hour, learned and smoothed by the store; 0 = none expected.
  double preemption_rate_per_node_hour = 0;
  Seconds idle_timeout{0};  // release a node idle this long; 0 = never (reserved nodes never are)
  bool elastic = false;     // the provider adds nodes on request (Plan::node_requests)
  int node_gpus = 0;        // GPUs of one node the provider adds; 0 = sized to the request
  int requested_gpus = 0;   // GPUs already asked of the provider and not yet registered (in flight)
  // Spot: what an admin expects before anything is observed (reclaims per node-hour); the
  // store blends it with observed notices into preemption_rate_per_node_hour.
  double preemption_prior_per_node_hour = 0;
  // Spot: expected hours until a pool with no live node has one again (learned by the
  // store from its outages); 0 = unknown.
  double mean_outage_hours = 0;
  // The nodes it really has (issue 17), from the store; quotes and capacity figures use these,
  // not max_gpus, which is only how far the pool may grow.
  int largest_node_gpus = 0;  // GPUs of its biggest registered node, live or not; 0 = none yet
  int live_gpus = 0;          // GPUs of its live nodes now
  // Reserved: GPUs paid for whether used or not (a commitment); 0 = count the live nodes.
  int committed_gpus = 0;
  // Spot (issue 14, decision 0023): the pool's learned availability chain, refitted by the
  // store in the background from what it observes and what an admin imported; null until
  // the first fit (the policy then falls back to the rules of decisions 0014 and 0015).
  std::shared_ptr<const AvailabilityModel> availability;
  AvailabilityNow availability_now;  // up or down now, and for how long
  // Spot, multi-node gangs (decision 0032): per gang size in use, the chain of spells in
  // which at least that many of its nodes were alive ("all N up"), refitted with
  // `availability`. A size missing here has no evidence yet.
  std::map<int, std::shared_ptr<const AvailabilityModel>> gang_availability;
};

struct Node {
  std::int64_t id = 0;
  std::string name;
  PoolId pool_id = 0;
  int gpus = 0;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  Timestamp lease_expires_at{};
  bool under_notice = false;  // spot reclaim notice received: nothing new is placed here
  std::optional<Timestamp> idle_since{};  // since when no attempt has run here; empty while busy
  // Where the node's peers reach it (a multi-node gang's rendezvous): the worker's
  // --advertise-address, else its host name. Empty: not given.
  std::string address;
};

// Registration's check of a node against its pool (decision 0021). The GPU types match
// ignoring case ("a100" as a worker detects it is the pool's "A100"); the memory matches
// within 10 % of the pool's (nvidia-smi reports a 16 GB T4 as 15 GB). A pool with no type
// (empty) or no memory (0) accepts any. FailedPrecondition naming both sides, e.g. "node
// gpu T4 16 GB does not match pool a100-spot (A100, 80 GB)".
Status CheckNodeFitsPool(const Node& node, const Pool& pool);

}  // namespace frugal::model
