// Hand-made markets for the simulator tests: one-hour steps, so a step's cost is its price.
#pragma once

#include <string>
#include <vector>

#include "bench/sim/engine.h"

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
    zone.reclaims.assign(m.steps + 1, 0);
    zone.node_hours.assign(m.steps + 1, 0);
    for (int j = 0; j < m.steps; ++j) {
      zone.up.push_back(up[z][j] == '1');
      zone.price.push_back(spot[z]);
      bool drop = j > 0 && zone.up[j - 1] && !zone.up[j];
      zone.reclaims[j + 1] = zone.reclaims[j] + drop;
      zone.node_hours[j + 1] = zone.node_hours[j] + zone.up[j];
    }
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
  int Decide(const JobView& v) override {
    return v.t < static_cast<int>(targets_.size()) ? targets_[v.t] : kIdle;
  }

 private:
  std::vector<int> targets_;
};

}  // namespace frugal::sim::testing
