// YAML <-> JSON for `frugal admin apply -f FILE` and `frugal admin get -o yaml`. The
// scheduler speaks JSON only; the CLI turns the admin's YAML file into the JSON document
// POST /v1/admin/apply takes, and JSON replies back into YAML for people.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace frugal::cli {

// Parses YAML text into JSON. Plain scalars become null (~, null), booleans (true/false),
// integers, or strings; decimals stay strings ("0.92") so money never passes through a
// float; quoted scalars are always strings. Anchors/aliases resolve as yaml-cpp does.
// Errors are InvalidArgument with the line and column, or the path of a duplicate key.
StatusOr<nlohmann::json> YamlToJson(const std::string& text);

// Block-style YAML for `value`, ending in a newline; where yaml-cpp cannot print that so it
// reads back as `value` (a string with a Unicode noncharacter), JSON, which YAML reads too.
std::string JsonToYaml(const nlohmann::json& value);

}  // namespace frugal::cli
