// Parsing flag values for the `frugal` CLI. Each check is also a CLI11 validator, so bad
// input is a usage error (exit 2) caught while parsing, before anything is sent.
// Pure functions; the validators are safe to share between options.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "common/clock.h"
#include "common/status.h"

namespace CLI {
class Validator;
}

namespace frugal::cli {

// "k=v" as {"k", "v"}; InvalidArgument when there is no '=' or no key.
StatusOr<std::pair<std::string, std::string>> SplitKeyValue(const std::string& text);

// "+6h" is `now` plus a duration; anything else must be an RFC 3339 time.
StatusOr<Timestamp> ParseDeadline(const std::string& text, Timestamp now);

// Adapts a Status-returning check to CLI11, whose validators return "" for valid input;
// the error's message becomes CLI11's. `description` is the value's name in --help.
CLI::Validator StatusValidator(std::function<Status(const std::string&)> check,
                               std::string description);

// A duration (90s, 15m, 2h30m, 1d), shown as DURATION.
const CLI::Validator& DurationCheck();

// Digits only, at least 1: CLI11's PositiveNumber parses a double and words its errors
// for one. `max_digits` keeps the value inside int (9) or int64 (18).
CLI::Validator PositiveIntegerCheck(std::size_t max_digits, std::string description);

// KEY=VALUE (SplitKeyValue).
const CLI::Validator& KeyValueCheck();

}  // namespace frugal::cli
