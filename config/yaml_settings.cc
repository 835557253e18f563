#include "config/yaml_settings.h"

namespace frugal::config {

Status ReadYamlSettings(const std::string& path, const SettingSetter& set) {
  if (path.empty()) return Status::Ok();
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("cannot read config " + path + ": " + e.what(), "config");
  }
  if (!root || root.IsNull()) return Status::Ok();
  if (!root.IsMap()) return InvalidArgument(path + ": top level must be a mapping");
  for (const auto& kv : root) {
    // A complex key ("? [a, b]") made as<std::string>() throw out of the loader (found by
    // tests/fuzz/scheduler_config_fuzz).
    if (!kv.first.IsScalar()) return InvalidArgument(path + ": keys must be plain text", "config");
    const std::string key = kv.first.as<std::string>();
    Status st = set(key, kv.second);
    if (!st.ok()) {
      return Status(st.code(), path + ": " + st.message(), st.field().empty() ? key : st.field());
    }
  }
  return Status::Ok();
}

StatusOr<std::string> ScalarText(const std::string& key, const YAML::Node& value) {
  if (!value.IsScalar()) return InvalidArgument("'" + key + "' must be a scalar", key);
  return value.as<std::string>();
}

}  // namespace frugal::config
