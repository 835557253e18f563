#include "bench/sim/cluster_floor.h"

#include <algorithm>

namespace frugal::sim {

CostFloor NoReservedFloor(const ClusterSetup& setup) {
  const Market& m = setup.spot;
  const double od = setup.od_price;
  const double per_gpu = 1.0 / std::max(1, m.gpus_per_instance);
  CostFloor f;
  for (const auto& j : setup.jobs) {
    const double gpu_hours = j.gpus * j.work / 60.0;
    double best = od;
    if (j.tolerance != model::Tolerance::kNone && m.steps > 0) {
      // Generous to the policy: a checkpointed job pays the lowest price of any minute a
      // zone is up in its window; a restartable one the lowest price of a spell that holds
      // its whole run inside the window.
      const bool whole_run = j.tolerance == model::Tolerance::kRestartable;
      for (size_t z = 0; z < m.zones.size(); ++z) {
        const int zone = static_cast<int>(z);
        int up_since = -1;
        double spell_low = 0;
        for (int t = j.arrival; t < j.deadline; ++t) {
          const int s = m.StepAtMinute(t);
          if (!m.Up(zone, s)) {
            up_since = -1;
            continue;
          }
          const double price = m.Price(zone, s) * per_gpu;
          if (up_since < 0) up_since = t, spell_low = price;
          spell_low = std::min(spell_low, price);
          // A run of j.work minutes ending at t + 1 fits the spell and the window.
          if (!whole_run || t + 1 - up_since >= j.work) best = std::min(best, spell_low);
        }
      }
    }
    const double cost = best * gpu_hours;
    f.total += cost;
    (best >= od ? f.on_demand : f.spot) += cost;
  }
  return f;
}

}  // namespace frugal::sim
