// Hand-made markets for the simulator tests: one-hour steps, so a step's cost is its price.
// And the same single-job problem as the real policy sees it (SpotAndOnDemand), for the
// decisions the simulator found costly.
#pragma once

#include <string>
#include <vector>

#include "bench/sim/single_job_sim.h"
#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/snapshot.h"

namespace frugal::sim::testing {

// A market of one-hour steps; zone z is up in step j when up[z][j] is '1'; spot costs
// spot[z] per instance-hour, on-demand `od`.
inline Market HandMarket(const std::vector<std::string>& up, const std::vector<double>& spot,
                         double od) {
  Market m;
  m.step_seconds = 3600;
  m.od_price = od;
  m.steps = up.empty() ? 0 : static_cast<int>(up.front().size());
  for (size_t z = 0; z < up.size(); ++z) {
    Zone zone;
    zone.name = std::to_string(z);  // (not "z" + ...: GCC 12 warns -Wrestrict on it)
    for (int j = 0; j < m.steps; ++j) {
      zone.up.push_back(up[z][j] == '1');
      zone.price.push_back(spot[z]);
    }
    FillHistory(zone, 1, m.StepHours());
    m.zones.push_back(zone);
  }
  return m;
}

inline JobShape Job(int work, int deadline, int changeover, int checkpoint, int start = 0) {
  JobShape j;
  j.start = start;
  j.work = work;
  j.deadline = deadline;
  j.changeover = changeover;
  j.checkpoint = checkpoint;
  return j;
}

// Plays a fixed list of targets, one per step (idle past its end).
class Scripted final : public Controller {
 public:
  explicit Scripted(std::vector<int> targets) : targets_(std::move(targets)) {}
  std::string Name() const override { return "scripted"; }
  int Decide(const StepView& v) override {
    return v.t < static_cast<int>(targets_.size()) ? targets_[v.t] : kIdle;
  }

 private:
  std::vector<int> targets_;
};

// A snapshot of one job's market: a spot pool (id 1, named "spot", nodes 2000, 2001, ...)
// and an on-demand pool (id 100, "on-demand", nodes 100000, ...), each of `nodes` one-GPU
// V100 nodes whose leases run an hour past `now`, and max_gpus = `nodes`. Fill the fields
// by name, call Build(), then add the pending job or running attempt.
struct SpotAndOnDemand {
  Timestamp now{};
  int nodes = 1;          // per pool
  Micros spot_price = 0;  // per GPU-hour
  Micros od_price = 0;
  double spot_rate = 0;   // the spot pool's learned reclaims per node-hour
  bool spot_up = true;    // false: the spot pool has no live node (only on-demand's are listed)

  model::Snapshot Build() const {
    model::Snapshot s;
    s.now = now;
    s.pools = {Pool(1, model::CapacityKind::kSpot, spot_price, spot_rate),
               Pool(100, model::CapacityKind::kOnDemand, od_price, 0)};
    if (spot_up) AddNodes(s, 1, 2000);
    AddNodes(s, 100, 100000);
    return s;
  }

 private:
  model::Pool Pool(model::PoolId id, model::CapacityKind kind, Micros price, double rate) const {
    model::Pool p;
    p.id = id;
    p.name = kind == model::CapacityKind::kSpot ? "spot" : "on-demand";
    p.kind = kind;
    p.gpu_type = "V100";
    p.price_per_gpu_hour = price;
    p.max_gpus = nodes;
    p.node_gpus = 1;
    p.preemption_rate_per_node_hour = rate;
    return p;
  }

  void AddNodes(model::Snapshot& s, model::PoolId pool, model::NodeId first) const {
    for (int k = 0; k < nodes; ++k) {
      model::Node n;
      n.id = first + k;
      n.name = std::to_string(first + k);
      n.pool_id = pool;
      n.gpus = 1;
      n.gpu_type = "V100";
      n.lease_expires_at = now + std::chrono::hours(1);
      s.nodes.push_back(n);
    }
  }
};

}  // namespace frugal::sim::testing
