// Who calls the store: a Principal resolved from a bearer token (JobStore::Authenticate),
// or SystemActor() for what the system does by itself. Shared by every store port.
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"
#include "scheduler/model/attempt.h"
#include "scheduler/model/job.h"

namespace frugal::store {

// kMetrics: may read GET /metrics and nothing else (a scraper's token).
// kWorker: a join token: may register nodes (POST /v1/workers/register) and nothing else.
// kNode: a node credential issued by registration: may call the worker routes for that
// node only (decision 0019). Never an API token's role: ParseRole refuses it.
enum class Role { kAdmin, kResearcher, kWorker, kMetrics, kNode };
const char* ToString(Role r);
StatusOr<Role> ParseRole(const std::string& s);

// Who is calling, resolved from a bearer token.
struct Principal {
  std::int64_t token_id = 0;
  Role role = Role::kResearcher;
  model::TeamId team_id = 0;
  std::string team;
  model::UserId user_id = 0;
  std::string user;
  // Role kNode only: the node the credential belongs to (user holds its name).
  model::NodeId node_id = 0;
};

// The actor of changes the system makes by itself (start-up tokens, test fixtures).
Principal SystemActor();

}  // namespace frugal::store
