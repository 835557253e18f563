#include "scheduler/policy/policy.h"

#include "scheduler/policy/fifo_policy.h"

namespace frugal::policy {

std::vector<std::string> PolicyNames() { return {"placement/fifo"}; }

StatusOr<std::unique_ptr<Policy>> MakePolicy(const std::string& name) {
  if (name == "placement/fifo") return std::unique_ptr<Policy>(new FifoPolicy());
  std::string known;
  for (const auto& n : PolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return InvalidArgument("unknown policy '" + name + "' (known: " + known + ")", "policy");
}

}  // namespace frugal::policy
