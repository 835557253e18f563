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
// POST /v1/jobs:batch alone may send more: up to kMaxBatchJobs specs in 16 MiB.
constexpr const char* kBatchPath = "/v1/jobs:batch";
constexpr std::size_t kMaxBatchBodyBytes = 16 << 20;
constexpr std::size_t kMaxBatchJobs = 10000;

// The body limit of a request to `path`.
std::size_t MaxBodyBytes(const std::string& path);

// PayloadTooLarge over `max_bytes`; InvalidArgument if nesting exceeds kMaxJsonDepth.
Status CheckJsonLimits(const std::string& body, std::size_t max_bytes = kMaxBodyBytes);

}  // namespace frugal::api
