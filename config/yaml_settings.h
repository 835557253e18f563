// The settings file both binaries read (frugal-scheduler's and frugal-worker's YAML): a
// top-level mapping of keys to values, each handed to the caller's setter in file order.
#pragma once

#include <yaml-cpp/yaml.h>

#include <functional>
#include <string>

#include "common/status.h"

namespace frugal::config {

using SettingSetter = std::function<Status(const std::string& key, const YAML::Node& value)>;

// Reads `path` (nothing to do if empty, or if the file is empty) and calls `set` for each
// entry. Every error is InvalidArgument and starts with the path, so the user knows which
// file to fix; the field is the setter's, or the key.
Status ReadYamlSettings(const std::string& path, const SettingSetter& set);

// For setters that take text: the scalar value, or an error naming the key.
StatusOr<std::string> ScalarText(const std::string& key, const YAML::Node& value);

}  // namespace frugal::config
