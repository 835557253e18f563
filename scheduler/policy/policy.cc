#include "scheduler/policy/policy.h"

#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/placement/fifo_policy.h"

namespace frugal::policy {

const PolicyConfig& Policy::config() const {
  static const PolicyConfig kDefaults;
  return kDefaults;
}

std::vector<std::string> PolicyNames() { return {"placement/fifo", "placement/cost"}; }

StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name) {
  return MakePolicy(name, PolicyConfig{});
}

StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name, const PolicyConfig& config) {
  if (name == "placement/fifo") return std::unique_ptr<Policy>(new FifoPolicy());
  if (name == "placement/cost") return std::unique_ptr<Policy>(new CostPolicy(config));
  std::string known;
  for (const auto& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown policy '" + name + "' (known: " + known + ")", "policy");
}

}  // namespace frugal::policy
