// Job arrays in the CLI (cli/array_commands.cc, decision 0026): parsing `submit --array`,
// submitting one, and the whole array's status, cancel and cost. Each Run* prints its
// result to the session and returns the request's error, if any.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli/command.h"
#include "cli/submit.h"
#include "common/status.h"

namespace frugal::cli {

// `--array` of submit: indices first..last by step, and how many may run at once.
struct ArraySpec {
  int first = 0;
  int last = 0;
  int step = 1;
  std::optional<int> max_running;
};

// "FIRST-LAST[:STEP][%MAX_RUNNING]" or a count "N" (0 to N-1); InvalidArgument otherwise.
StatusOr<ArraySpec> ParseArraySpec(const std::string& text);
Status RunSubmitArray(Session& s, const SubmitOptions& o);
Status RunArrayStatus(Session& s, std::int64_t id);
Status RunArrayCancel(Session& s, std::int64_t id);
Status RunArrayCost(Session& s, std::int64_t id);

}  // namespace frugal::cli
