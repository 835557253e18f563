// Team quotas: concurrent GPUs per team per capacity kind and per pool. Any policy's plan
// goes through EnforceQuotas before it is applied, so a quota is never exceeded whatever
// the policy decided; placement/cost also skips options a team has no room for, so it
// looks elsewhere (e.g. spot when on-demand is full) instead of waiting on a refusal.
// Pure.
#pragma once

#include <map>
#include <string>
#include <utility>

#include "scheduler/model/snapshot.h"

namespace frugal::policy {

class QuotaBook {
 public:
  explicit QuotaBook(const model::Snapshot& snapshot);

  // Whether `team` may add `gpus` on `pool` now.
  bool Allows(model::TeamId team, const model::Pool& pool, int gpus) const;
  // The limit that refuses it, e.g. "over team quota: 16/16 on-demand GPUs in use", or "".
  std::string Holding(model::TeamId team, const model::Pool& pool, int gpus) const;
  void Take(model::TeamId team, const model::Pool& pool, int gpus);

 private:
  const model::Snapshot& snapshot_;
  std::map<std::pair<model::TeamId, model::CapacityKind>, int> by_kind_;  // in use
  std::map<std::pair<model::TeamId, model::PoolId>, int> by_pool_;        // in use
};

// Drops assignments that would take a team over a quota (in plan order, a gang's parts
// together) and leaves those jobs waiting with the quota as the reason; a waiting job whose
// team has no room on any pool its GPU type allows gets that reason too. Node requests are
// judged the same way (HoldNodeRequests): no node is started for a job over its quota.
void EnforceQuotas(const model::Snapshot& snapshot, model::Plan& plan);

}  // namespace frugal::policy
