// The money side of the store: the cost ledger and its reports. Every figure is a sum of one
// function, F(t) = floor(gpus x rate x microseconds since the attempt started / 3.6e9), over
// ledger intervals (ended attempts) and running attempts up to the report's end, so a team's
// total is the sum of its jobs' to the micro-dollar and a job's the sum of its attempts'.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "scheduler/model/guardrails.h"
#include "scheduler/model/job.h"

namespace frugal::store {

enum class CostDimension { kTeam, kProject, kUser, kPool, kJob };
const char* ToString(CostDimension d);
StatusOr<CostDimension> ParseCostDimension(const std::string& s);

struct CostQuery {
  CostDimension by = CostDimension::kTeam;
  std::optional<Timestamp> from;  // empty: since the beginning
  std::optional<Timestamp> to;    // empty: now (running attempts accrue up to it)
  std::optional<model::TeamId> team;  // researchers see their own team only
};

struct CostRow {
  std::string key;            // team, project, user, pool name or job id
  Micros spend = 0;           // everything billed in the window
  Micros wasted = 0;          // lost work: since the last checkpoint at preemptions/losses
  double gpu_hours = 0;
  int jobs = 0;
  int succeeded_jobs = 0;
  Micros on_demand_equivalent = 0;  // the same GPU time at the on-demand price
  Micros spot_savings = 0;          // on-demand equivalent minus spend, spot usage only
};

struct PoolUse {
  std::string pool;
  std::string capacity_kind;
  double busy_gpu_hours = 0;
  // Reserved: its paid GPUs (committed_gpus, or its registered nodes') over the window;
  // else = busy.
  double paid_gpu_hours = 0;
  Micros spend = 0;           // usage billed on the pool
  Micros idle_reserved = 0;   // reserved: paid but unused, in money (waste)
};

struct CostReport {
  Timestamp from{};
  Timestamp to{};
  std::vector<CostRow> rows;  // by spend, largest first
  CostRow total;              // key "total"
  std::vector<PoolUse> pools; // admin only (empty for a team-scoped report)
};

class CostStore {
 public:
  virtual ~CostStore() = default;
  virtual StatusOr<CostReport> Cost(const CostQuery& query) = 0;
  // Jobs that ended in the query's window (and team), with each attempt's pool, GPUs, run
  // time and peak GPU memory: the input of right-sizing advice (policy/guardrails.h).
  virtual StatusOr<std::vector<model::JobUsage>> EndedJobUsage(const CostQuery& query) = 0;
};

// The same F in C++, for tests and tools: cost of [t0_us, t1_us] of an attempt that started
// at origin_us (all microseconds since the epoch; t0 >= origin). Exact (128-bit).
Micros IntervalCostMicros(int gpus, Micros rate_per_gpu_hour, std::int64_t origin_us,
                          std::int64_t t0_us, std::int64_t t1_us);

}  // namespace frugal::store
