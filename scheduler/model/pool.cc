#include "scheduler/model/pool.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

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

namespace {

bool SameIgnoringCase(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

Status CheckNodeFitsPool(const Node& node, const Pool& pool) {
  const bool type_ok = pool.gpu_type.empty() || SameIgnoringCase(node.gpu_type, pool.gpu_type);
  // |node - pool| <= 10 % of pool, in integers: 10 * |node - pool| <= pool.
  const bool mem_ok = pool.gpu_mem_gb <= 0 ||
                      10 * std::abs(node.gpu_mem_gb - pool.gpu_mem_gb) <= pool.gpu_mem_gb;
  if (type_ok && mem_ok) return Status::Ok();
  const std::string pool_type = pool.gpu_type.empty() ? "any type" : pool.gpu_type;
  const std::string pool_mem =
      pool.gpu_mem_gb <= 0 ? "any memory" : std::to_string(pool.gpu_mem_gb) + " GB";
  return FailedPrecondition("node gpu " + node.gpu_type + " " + std::to_string(node.gpu_mem_gb) +
                                " GB does not match pool " + pool.name + " (" + pool_type + ", " +
                                pool_mem + "): register it in a pool of its GPU, or correct" +
                                " --gpu-type/--gpu-mem-gb",
                            type_ok ? "gpu_mem_gb" : "gpu_type");
}

}  // namespace frugal::model
