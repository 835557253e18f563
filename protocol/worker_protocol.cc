#include "protocol/worker_protocol.h"

#include <algorithm>

namespace frugal::protocol {

using nlohmann::json;

namespace {

constexpr Outcome kOutcomes[] = {Outcome::kSucceeded, Outcome::kFailed, Outcome::kTimedOut,
                                 Outcome::kCancelled, Outcome::kPreempted};
constexpr StopReason kStopReasons[] = {StopReason::kCancelled, StopReason::kPreempted,
                                       StopReason::kTimedOut, StopReason::kStale};

}  // namespace

const char* ToString(Outcome o) {
  switch (o) {
    case Outcome::kSucceeded: return "succeeded";
    case Outcome::kFailed: return "failed";
    case Outcome::kTimedOut: return "timed_out";
    case Outcome::kCancelled: return "cancelled";
    case Outcome::kPreempted: return "preempted";
  }
  return "unknown";
}

StatusOr<Outcome> ParseOutcome(std::string_view s) {
  for (Outcome o : kOutcomes) {
    if (s == ToString(o)) return o;
  }
  return InvalidArgument("unknown outcome '" + std::string(s.substr(0, 32)) +
                             "' (succeeded|failed|timed_out|cancelled|preempted)",
                         "outcome");
}

const char* ToString(StopReason r) {
  switch (r) {
    case StopReason::kCancelled: return "cancelled";
    case StopReason::kPreempted: return "preempted";
    case StopReason::kTimedOut: return "timed_out";
    case StopReason::kStale: return "stale";
  }
  return "unknown";
}

StatusOr<StopReason> ParseStopReason(std::string_view s) {
  for (StopReason r : kStopReasons) {
    if (s == ToString(r)) return r;
  }
  return InvalidArgument("unknown stop reason '" + std::string(s.substr(0, 32)) +
                             "' (cancelled|preempted|timed_out|stale)",
                         "reason");
}

Outcome OutcomeOf(StopReason r) {
  switch (r) {
    case StopReason::kCancelled: return Outcome::kCancelled;
    case StopReason::kTimedOut: return Outcome::kTimedOut;
    case StopReason::kPreempted:
    case StopReason::kStale: return Outcome::kPreempted;
  }
  return Outcome::kPreempted;
}

bool IsFence(std::string_view s) {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

json Encode(const StartOrder& a) {
  return {{"attempt_id", a.attempt_id},
          {"job_id", a.job_id},
          {"attempt", a.attempt},
          {"command", a.command},
          {"env", a.env},
          {"working_dir", a.working_dir},
          {"gpus", a.gpus},
          {"resume_from", a.resume_from},
          {"resume_step", a.resume_step ? json(*a.resume_step) : json(nullptr)},
          {"max_runtime_seconds", a.max_runtime ? json(a.max_runtime->count()) : json(nullptr)},
          {"fence", a.fence}};
}

StatusOr<StartOrder> ParseStartOrder(const json& j) {
  try {
    // get<int> of a float out of int's range is undefined behaviour, not an exception
    // (worker_assignment_fuzz: "attempt": 1.1e83): whole numbers only.
    for (const char* key : {"attempt_id", "job_id", "attempt", "gpus", "resume_step",
                            "max_runtime_seconds"}) {
      const auto it = j.find(key);
      if (it != j.end() && !it->is_null() && !it->is_number_integer()) {
        return InvalidArgument(std::string("malformed assignment: ") + key +
                               " must be a whole number");
      }
    }
    StartOrder a;
    a.attempt_id = j.at("attempt_id").get<std::int64_t>();
    a.job_id = j.at("job_id").get<std::int64_t>();
    a.attempt = j.at("attempt").get<int>();
    a.gpus = j.at("gpus").get<int>();
    a.command = j.at("command").get<std::vector<std::string>>();
    a.env = j.value("env", std::map<std::string, std::string>{});
    a.working_dir = j.value("working_dir", "");
    a.resume_from = j.value("resume_from", "");
    if (j.contains("resume_step") && !j["resume_step"].is_null()) {
      a.resume_step = j["resume_step"].get<std::int64_t>();
    }
    if (j.contains("max_runtime_seconds") && !j["max_runtime_seconds"].is_null()) {
      a.max_runtime = std::chrono::seconds(j["max_runtime_seconds"].get<std::int64_t>());
    }
    a.fence = j.at("fence").get<std::string>();
    if (a.attempt_id < 1 || a.gpus < 0 || a.command.empty()) {
      return InvalidArgument("assignment needs an attempt id, gpus >= 0 and a command");
    }
    if (!IsFence(a.fence)) return InvalidArgument("assignment fence is not 64 hex characters");
    return a;
  } catch (const json::exception& e) {
    return InvalidArgument(std::string("malformed assignment: ") + e.what());
  }
}

json FinishBody(std::int64_t lease_epoch, const std::string& fence, Outcome outcome,
                std::optional<int> exit_code) {
  return {{"lease_epoch", lease_epoch},
          {"fence", fence},
          {"outcome", ToString(outcome)},
          {"exit_code", exit_code ? json(*exit_code) : json(nullptr)}};
}

}  // namespace frugal::protocol
