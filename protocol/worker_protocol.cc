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

Status CheckAddress(std::string_view s, const std::string& field) {
  const std::string what = "; give a host name or IP address such as gpu-7.internal or 10.0.0.7";
  if (s.empty()) return InvalidArgument(field + ": must not be empty" + what, field);
  if (s.size() > 255) {
    return InvalidArgument(
        field + ": at most 255 characters, got " + std::to_string(s.size()) + what, field);
  }
  // Printable ASCII only: host names and IP literals are ASCII (IDNs travel as punycode),
  // and it also keeps out whitespace outside ASCII.
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c <= 0x20 || c >= 0x7f) {
      return InvalidArgument(field + ": character " + std::to_string(i + 1) +
                                 " is whitespace, a control character or not ASCII" + what,
                             field);
    }
  }
  return Status::Ok();
}

namespace {

// "gang" of an assignment into `a`. Numbers are checked as whole numbers before get<>()
// for the reason ParseStartOrder gives, and against their ranges before narrowing.
Status ParseGang(const json& g, StartOrder& a) {
  if (!g.is_object()) {
    return InvalidArgument(
        R"(gang: an object {"rank", "size", "master_addr", "master_port"})", "gang");
  }
  auto whole = [&g](const char* key, std::int64_t lo, std::int64_t hi,
                    const std::string& range) -> StatusOr<int> {
    const std::string field = std::string("gang.") + key;
    const auto it = g.find(key);
    if (it == g.end() || !it->is_number_integer()) {
      return InvalidArgument(field + ": required, a whole number " + range, field);
    }
    // Unsigned first: an unsigned above int64's range must not wrap to a small value.
    if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(hi)) {
      return InvalidArgument(field + ": must be " + range, field);
    }
    const auto v = it->get<std::int64_t>();
    if (v < lo || v > hi) return InvalidArgument(field + ": must be " + range, field);
    return static_cast<int>(v);
  };
  ASSIGN_OR_RETURN(a.gang_size, whole("size", 2, kMaxGangSize,
                                      "from 2 to " + std::to_string(kMaxGangSize)));
  ASSIGN_OR_RETURN(a.rank, whole("rank", 0, a.gang_size - 1,
                                 "from 0 to size - 1 (" + std::to_string(a.gang_size - 1) + ")"));
  ASSIGN_OR_RETURN(a.master_port, whole("master_port", 1, 65535, "from 1 to 65535"));
  const auto addr = g.find("master_addr");
  if (addr == g.end() || !addr->is_string()) {
    return InvalidArgument("gang.master_addr: required, rank 0's host name or IP address",
                           "gang.master_addr");
  }
  a.master_addr = addr->get<std::string>();
  return CheckAddress(a.master_addr, "gang.master_addr");
}

}  // namespace

json Encode(const StartOrder& a) {
  json out = {
      {"attempt_id", a.attempt_id},
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
  if (a.gang_size > 1) {
    out["gang"] = {{"rank", a.rank},
                   {"size", a.gang_size},
                   {"master_addr", a.master_addr},
                   {"master_port", a.master_port}};
  }
  return out;
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
    if (const auto g = j.find("gang"); g != j.end() && !g->is_null()) {
      RETURN_IF_ERROR(ParseGang(*g, a));
    }
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
