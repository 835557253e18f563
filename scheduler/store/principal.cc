#include "scheduler/store/principal.h"

namespace frugal::store {

const char* ToString(Role r) {
  switch (r) {
    case Role::kAdmin:
      return "admin";
    case Role::kResearcher:
      return "researcher";
    case Role::kWorker:
      return "worker";
    case Role::kMetrics:
      return "metrics";
    case Role::kNode:
      return "node";
  }
  return "unknown";
}

StatusOr<Role> ParseRole(const std::string& s) {
  for (auto r : {Role::kAdmin, Role::kResearcher, Role::kWorker, Role::kMetrics}) {
    if (s == ToString(r)) return r;
  }
  return InvalidArgument("unknown role '" + s.substr(0, 32) + "' (admin|researcher|worker|metrics)",
                         "role");
}

Principal SystemActor() {
  Principal p;
  p.role = Role::kAdmin;
  p.user = "system";
  p.team = "system";
  return p;
}

}  // namespace frugal::store
