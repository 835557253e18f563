#include "scheduler/store/cost_store.h"

namespace frugal::store {

const char* ToString(CostDimension d) {
  switch (d) {
    case CostDimension::kTeam: return "team";
    case CostDimension::kProject: return "project";
    case CostDimension::kUser: return "user";
    case CostDimension::kPool: return "pool";
    case CostDimension::kJob: return "job";
  }
  return "team";
}

StatusOr<CostDimension> ParseCostDimension(const std::string& s) {
  for (auto d : {CostDimension::kTeam, CostDimension::kProject, CostDimension::kUser,
                 CostDimension::kPool, CostDimension::kJob}) {
    if (s == ToString(d)) return d;
  }
  return InvalidArgument("by must be team, project, user, pool or job, got '" + s.substr(0, 32) +
                             "'",
                         "by");
}

namespace {

// gpus x rate x microseconds overflows 64 bits within a year: GCC's 128-bit integers.
__extension__ typedef __int128 Int128;

// floor(gpus x rate x us / 3.6e9) for us >= 0.
Int128 Cumulative(int gpus, Micros rate, std::int64_t us) {
  return static_cast<Int128>(gpus) * rate * us / 3'600'000'000LL;
}

}  // namespace

Micros IntervalCostMicros(int gpus, Micros rate_per_gpu_hour, std::int64_t origin_us,
                          std::int64_t t0_us, std::int64_t t1_us) {
  if (t1_us <= t0_us) return 0;
  return static_cast<Micros>(Cumulative(gpus, rate_per_gpu_hour, t1_us - origin_us) -
                             Cumulative(gpus, rate_per_gpu_hour, t0_us - origin_us));
}

}  // namespace frugal::store
