// Where the `frugal` CLI finds its scheduler and token. Each setting comes from the first
// source that has it: command-line flag, environment ($FRUGAL_URL, $FRUGAL_TOKEN), the
// config file (~/.config/frugal/config.yaml, keys `url` and `token`), then the default URL.
// Resolution is a pure function of its inputs so it can be tested without touching $HOME.
#pragma once

#include <optional>
#include <string>

#include "common/status.h"

namespace frugal::cli {

inline constexpr char kDefaultUrl[] = "http://127.0.0.1:8080";

struct CliConfig {
  std::string url;
  std::string token;
};

// Everything resolution looks at. Empty strings count as "not given", so `FRUGAL_TOKEN=`
// does not hide the config file.
struct ConfigSources {
  std::string flag_url;
  std::string flag_token;
  std::string env_url;
  std::string env_token;
  // The config file's path, or empty when there is no home to look in.
  std::string config_path;
};

// Fills the env_* fields and config_path from the process environment: $FRUGAL_URL,
// $FRUGAL_TOKEN, and $XDG_CONFIG_HOME (if absolute) or $HOME/.config for the file.
ConfigSources SourcesFromEnvironment(std::string flag_url, std::string flag_token);

// Picks url and token by precedence. A missing config file is fine; an unreadable or
// malformed one is InvalidArgument naming the file. No token anywhere is
// Unauthenticated with a message saying how to provide one.
StatusOr<CliConfig> ResolveConfig(const ConfigSources& sources);

}  // namespace frugal::cli
