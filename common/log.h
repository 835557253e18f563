// Logging setup: one JSON object per line on stderr (spdlog). Callers add ids as fields
// in the message; tokens are never passed to the logger (the API logs only token ids).
#pragma once

#include <string>

#include "common/status.h"

namespace frugal {

// Level names: trace, debug, info, warn, error, off. Unknown names are an error.
Status InitLogging(const std::string& level);

// Escapes `s` for use inside a JSON string literal in a log message.
std::string JsonEscape(const std::string& s);

}  // namespace frugal
