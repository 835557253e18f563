#include "scheduler/model/pool.h"

#include <algorithm>

namespace frugal::model {

const char* ToString(CapacityKind k) {
  switch (k) {
    case CapacityKind::kReserved: return "reserved";
    case CapacityKind::kOnDemand: return "on_demand";
    case CapacityKind::kSpot: return "spot";
  }
  return "unknown";
}

StatusOr<CapacityKind> ParseCapacityKind(const std::string& s) {
  for (auto k : {CapacityKind::kReserved, CapacityKind::kOnDemand, CapacityKind::kSpot}) {
    if (s == ToString(k)) return k;
  }
  return InvalidArgument("unknown capacity kind '" + s.substr(0, 32) +
                             "' (reserved|on_demand|spot)",
                         "capacity_kind");
}

double LearnedPreemptionRate(double prior_per_node_hour, double notices, double node_hours) {
  if (node_hours < 0) node_hours = 0;
  return (prior_per_node_hour * kPreemptionPriorNodeHours + notices) /
         (kPreemptionPriorNodeHours + node_hours);
}

double LearnedOutageHours(double outages, double outage_hours) {
  return (kOutagePriorHours + std::max(0.0, outage_hours)) / (1.0 + std::max(0.0, outages));
}

}  // namespace frugal::model
