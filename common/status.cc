#include "common/status.h"

namespace frugal {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid_argument";
    case StatusCode::kUnauthenticated: return "unauthenticated";
    case StatusCode::kPermissionDenied: return "permission_denied";
    case StatusCode::kNotFound: return "not_found";
    case StatusCode::kConflict: return "conflict";
    case StatusCode::kPayloadTooLarge: return "payload_too_large";
    case StatusCode::kFailedPrecondition: return "failed_precondition";
    case StatusCode::kUnavailable: return "unavailable";
    case StatusCode::kInternal: return "internal";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s = std::string(StatusCodeName(code_)) + ": " + message_;
  if (!field_.empty()) s += " (field " + field_ + ")";
  return s;
}

}  // namespace frugal
