#include "scheduler/model/guardrails.h"

namespace frugal::model {

const char* ToString(IdlePolicy p) { return p == IdlePolicy::kRequeue ? "requeue" : "warn"; }

StatusOr<IdlePolicy> ParseIdlePolicy(const std::string& s) {
  if (s == "warn") return IdlePolicy::kWarn;
  if (s == "requeue") return IdlePolicy::kRequeue;
  return InvalidArgument("unknown idle policy '" + s.substr(0, 32) + "' (warn|requeue)",
                         "idle_policy");
}

const char* ToString(IdleStep s) {
  switch (s) {
    case IdleStep::kNone: return "none";
    case IdleStep::kRequeue: return "requeue";
    case IdleStep::kStop: return "stop";
  }
  return "unknown";
}

}  // namespace frugal::model
