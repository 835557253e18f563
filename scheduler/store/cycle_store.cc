#include "scheduler/store/cycle_store.h"

namespace frugal::store {

namespace {

constexpr char kNotLeaderPrefix[] = "not the leader: ";

}  // namespace

Status NotLeader(const std::string& why) { return FailedPrecondition(kNotLeaderPrefix + why); }

bool IsNotLeader(const Status& st) {
  return st.code() == StatusCode::kFailedPrecondition &&
         st.message().rfind(kNotLeaderPrefix, 0) == 0;
}

}  // namespace frugal::store
