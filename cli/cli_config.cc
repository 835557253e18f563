#include "cli/cli_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace frugal::cli {

namespace {

struct FileConfig {
  std::string url;
  std::string token;
};

std::string GetEnv(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

StatusOr<std::string> ScalarKey(const YAML::Node& root, const char* key, const std::string& path) {
  const YAML::Node node = root[key];
  if (!node) return std::string();
  if (!node.IsScalar()) {
    return InvalidArgument(path + ": '" + key + "' must be a string", key);
  }
  return node.as<std::string>();
}

// yaml-cpp reports errors by throwing; this is the one place they become a Status.
StatusOr<FileConfig> ReadConfigFile(const std::string& path) {
  std::error_code ec;
  if (path.empty() || !std::filesystem::exists(path, ec)) return FileConfig{};
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("cannot read config file " + path + ": " + e.what());
  }
  if (root.IsNull()) return FileConfig{};  // an empty file
  if (!root.IsMap()) return InvalidArgument(path + ": expected a mapping with keys url, token");
  FileConfig out;
  ASSIGN_OR_RETURN(out.url, ScalarKey(root, "url", path));
  ASSIGN_OR_RETURN(out.token, ScalarKey(root, "token", path));
  return out;
}

std::string FirstNonEmpty(const std::string& a, const std::string& b, const std::string& c) {
  return !a.empty() ? a : !b.empty() ? b : c;
}

}  // namespace

ConfigSources SourcesFromEnvironment(std::string flag_url, std::string flag_token) {
  ConfigSources s;
  s.flag_url = std::move(flag_url);
  s.flag_token = std::move(flag_token);
  s.env_url = GetEnv("FRUGAL_URL");
  s.env_token = GetEnv("FRUGAL_TOKEN");
  // The XDG spec says to ignore a relative $XDG_CONFIG_HOME.
  std::string base = GetEnv("XDG_CONFIG_HOME");
  if (base.empty() || base.front() != '/') {
    const std::string home = GetEnv("HOME");
    base = home.empty() ? "" : home + "/.config";
  }
  if (!base.empty()) s.config_path = base + "/frugal/config.yaml";
  return s;
}

StatusOr<CliConfig> ResolveConfig(const ConfigSources& sources) {
  // Read the file only when a flag or variable does not already settle both settings, so a
  // broken file does not get in the way of someone who passes everything explicitly.
  FileConfig file;
  const bool need_file = FirstNonEmpty(sources.flag_url, sources.env_url, "").empty() ||
                         FirstNonEmpty(sources.flag_token, sources.env_token, "").empty();
  if (need_file) {
    ASSIGN_OR_RETURN(file, ReadConfigFile(sources.config_path));
  }
  CliConfig out;
  out.url = FirstNonEmpty(sources.flag_url, sources.env_url, file.url);
  if (out.url.empty()) out.url = kDefaultUrl;
  out.token = FirstNonEmpty(sources.flag_token, sources.env_token, file.token);
  if (out.token.empty()) {
    const std::string where = sources.config_path.empty() ? "the config file" : sources.config_path;
    return Status(StatusCode::kUnauthenticated,
                  "no API token: pass --token, set $FRUGAL_TOKEN, or put 'token: ...' in " + where);
  }
  return out;
}

}  // namespace frugal::cli
