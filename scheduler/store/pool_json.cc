#include "scheduler/store/pool_json.h"

#include "common/money.h"

namespace frugal::store {

nlohmann::json PoolSettingsJson(const model::Pool& p) {
  return {{"capacity_kind", model::ToString(p.kind)},
          {"gpu_type", p.gpu_type},
          {"gpu_mem_gb", p.gpu_mem_gb},
          {"speed", p.speed},
          {"price_per_gpu_hour", FormatDollars(p.price_per_gpu_hour, true)},
          {"max_gpus", p.max_gpus},
          {"committed_gpus", p.committed_gpus},
          {"startup_delay_seconds", p.startup_delay.count()},
          {"idle_timeout_seconds", p.idle_timeout.count()},
          {"preemption_prior_per_node_hour", p.preemption_prior_per_node_hour}};
}

}  // namespace frugal::store
