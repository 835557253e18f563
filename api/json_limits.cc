#include "api/json_limits.h"

namespace frugal::api {

std::size_t MaxBodyBytes(const std::string& path) {
  return path == kBatchPath ? kMaxBatchBodyBytes : kMaxBodyBytes;
}

Status CheckJsonLimits(const std::string& body, std::size_t max_bytes) {
  if (body.size() > max_bytes) {
    return Status(StatusCode::kPayloadTooLarge,
                  "request body is " + std::to_string(body.size()) + " bytes; the limit is " +
                      std::to_string(max_bytes));
  }
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxJsonDepth) {
        return InvalidArgument("JSON nested deeper than " + std::to_string(kMaxJsonDepth) +
                               " levels");
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return Status::Ok();
}

}  // namespace frugal::api
