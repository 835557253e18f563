// Limits checked before a request body reaches the JSON parser: size and nesting depth.
// nlohmann/json 3.11 can exhaust the stack on deeply nested input, so depth is counted
// by a scan that never recurses.
#pragma once

#include <cstddef>
#include <string>

#include "common/status.h"

namespace frugal::api {

constexpr std::size_t kMaxBodyBytes = 1 << 20;  // 1 MiB
constexpr int kMaxJsonDepth = 32;

// PayloadTooLarge over kMaxBodyBytes; InvalidArgument if nesting exceeds kMaxJsonDepth.
Status CheckJsonLimits(const std::string& body);

}  // namespace frugal::api
