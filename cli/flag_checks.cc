#include "cli/flag_checks.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>

namespace frugal::cli {

StatusOr<std::pair<std::string, std::string>> SplitKeyValue(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("expected KEY=VALUE, got '" + text + "'");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

StatusOr<Timestamp> ParseDeadline(const std::string& text, Timestamp now) {
  if (!text.empty() && text.front() == '+') {
    ASSIGN_OR_RETURN(Seconds d, ParseDuration(text.substr(1)));
    // Whole seconds: the deadline is shown back to people.
    return Timestamp(std::chrono::time_point_cast<Seconds>(now) + d);
  }
  auto t = ParseRfc3339(text);
  if (!t.ok()) {
    return InvalidArgument(
        "expected an RFC 3339 time (2026-11-22T18:00:00Z) or +DURATION (+6h), "
        "got '" +
        text + "'");
  }
  return t;
}

CLI::Validator StatusValidator(std::function<Status(const std::string&)> check,
                               std::string description) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) -> std::string {
        const Status st = check(value);
        return st.ok() ? "" : st.message();
      },
      std::move(description));
}

const CLI::Validator& DurationCheck() {
  static const CLI::Validator v =
      StatusValidator([](const std::string& s) { return ParseDuration(s).status(); }, "DURATION");
  return v;
}

CLI::Validator PositiveIntegerCheck(std::size_t max_digits, std::string description) {
  return StatusValidator(
      [max_digits](const std::string& s) {
        const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || s.find_first_not_of('0') == std::string::npos) {
          return InvalidArgument("expected a positive integer, got '" + s + "'");
        }
        if (s.size() - std::min(s.size(), s.find_first_not_of('0')) > max_digits) {
          return InvalidArgument("'" + s + "' is too large");
        }
        return Status::Ok();
      },
      std::move(description));
}

const CLI::Validator& KeyValueCheck() {
  static const CLI::Validator v =
      StatusValidator([](const std::string& s) { return SplitKeyValue(s).status(); }, "KEY=VALUE");
  return v;
}

}  // namespace frugal::cli
