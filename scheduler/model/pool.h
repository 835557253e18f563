// Capacity: pools of one kind and GPU type, and the nodes (workers) registered in them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/money.h"
#include "common/status.h"

namespace frugal::model {

using PoolId = std::int64_t;

enum class CapacityKind { kReserved, kOnDemand, kSpot };
const char* ToString(CapacityKind k);
StatusOr<CapacityKind> ParseCapacityKind(const std::string& s);

struct Pool {
  PoolId id = 0;
  std::string name;
  CapacityKind kind = CapacityKind::kOnDemand;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  double speed = 1.0;  // relative throughput; 1.0 = reference GPU
  Micros price_per_gpu_hour = 0;
  int max_gpus = 0;
};

struct Node {
  std::int64_t id = 0;
  std::string name;
  PoolId pool_id = 0;
  int gpus = 0;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  Timestamp lease_expires_at{};
};

}  // namespace frugal::model
