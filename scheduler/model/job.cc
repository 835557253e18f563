#include "scheduler/model/job.h"

namespace frugal::model {

const char* ToString(JobState s) {
  switch (s) {
    case JobState::kPending: return "pending";
    case JobState::kHeld: return "held";
    case JobState::kRunning: return "running";
    case JobState::kSucceeded: return "succeeded";
    case JobState::kFailed: return "failed";
    case JobState::kCancelled: return "cancelled";
    case JobState::kTimedOut: return "timed_out";
  }
  return "unknown";
}

const char* ToString(Tolerance t) {
  switch (t) {
    case Tolerance::kNone: return "none";
    case Tolerance::kRestartable: return "restartable";
    case Tolerance::kCheckpointed: return "checkpointed";
  }
  return "unknown";
}

StatusOr<JobState> ParseJobState(const std::string& s) {
  for (auto st : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kSucceeded,
                  JobState::kFailed, JobState::kCancelled, JobState::kTimedOut}) {
    if (s == ToString(st)) return st;
  }
  return InvalidArgument("unknown state '" + s.substr(0, 32) +
                             "' (pending|held|running|succeeded|failed|cancelled|timed_out)",
                         "state");
}

StatusOr<Tolerance> ParseTolerance(const std::string& s) {
  for (auto t : {Tolerance::kNone, Tolerance::kRestartable, Tolerance::kCheckpointed}) {
    if (s == ToString(t)) return t;
  }
  return InvalidArgument("unknown tolerance '" + s.substr(0, 32) +
                             "' (none|restartable|checkpointed)",
                         "tolerance");
}

bool IsTerminal(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled ||
         s == JobState::kTimedOut;
}

const std::vector<std::string>& DefaultPriorityClasses() {
  static const std::vector<std::string> kClasses = {"critical", "high", "normal", "low"};
  return kClasses;
}

StatusOr<int> PriorityRank(const std::string& cls) {
  const auto& classes = DefaultPriorityClasses();
  for (size_t i = 0; i < classes.size(); ++i) {
    if (classes[i] == cls) return static_cast<int>(i);
  }
  return InvalidArgument("unknown priority '" + cls.substr(0, 32) +
                             "' (critical|high|normal|low)",
                         "priority");
}

}  // namespace frugal::model
