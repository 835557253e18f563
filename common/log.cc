#include "common/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>

namespace frugal {

Status InitLogging(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") {
    return InvalidArgument("unknown log level '" + level + "' (trace|debug|info|warn|error|off)",
                           "log_level");
  }
  auto logger = spdlog::get("frugal");
  if (!logger) logger = spdlog::stderr_logger_mt("frugal");
  // Messages are written as `"event":"...", key: value` fragments by the callers.
  logger->set_pattern(R"({"ts":"%Y-%m-%dT%H:%M:%S.%fZ","level":"%l",%v})", spdlog::pattern_time_type::utc);
  logger->set_level(lvl);
  spdlog::set_default_logger(logger);
  return Status::Ok();
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

}  // namespace frugal
