#include "cli/yaml_json.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <set>

namespace frugal::cli {

using nlohmann::json;

namespace {

bool IsInteger(const std::string& s) {
  size_t i = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? 1 : 0;
  if (i == s.size() || s.size() - i > 18) return false;  // stays inside int64
  return s.find_first_not_of("0123456789", i) == std::string::npos;
}

// The plain scalars Convert reads as null or a boolean rather than as text. JsonToYaml
// quotes strings spelled like these, so that what it prints reads back the same.
bool IsNullWord(const std::string& s) { return s == "~" || s == "null" || s == "Null" || s == "NULL"; }
bool IsTrueWord(const std::string& s) { return s == "true" || s == "True"; }
bool IsFalseWord(const std::string& s) { return s == "false" || s == "False"; }

// Deeper than any cluster file needs. The limit also ends an alias that names its own
// anchor (`&a [*a]`), which yaml-cpp resolves into a cycle (admin_yaml_fuzz found it).
constexpr int kMaxDepth = 64;

StatusOr<json> Convert(const YAML::Node& node, const std::string& path, int depth) {
  if (depth > kMaxDepth)
    return InvalidArgument((path.empty() ? "" : path + ": ") + "nested deeper than " +
                           std::to_string(kMaxDepth) +
                           " levels (or an alias that contains itself)");
  switch (node.Type()) {
    case YAML::NodeType::Null:
    case YAML::NodeType::Undefined:
      return json(nullptr);
    case YAML::NodeType::Scalar: {
      const std::string& v = node.Scalar();
      if (node.Tag() != "?") return json(v);  // quoted (or explicitly tagged): a string
      if (IsNullWord(v)) return json(nullptr);
      if (IsTrueWord(v)) return json(true);
      if (IsFalseWord(v)) return json(false);
      if (IsInteger(v)) return json(std::stoll(v));
      return json(v);
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (std::size_t i = 0; i < node.size(); ++i) {
        ASSIGN_OR_RETURN(json item, Convert(node[i], path + "[" + std::to_string(i) + "]", depth + 1));
        out.push_back(std::move(item));
      }
      return out;
    }
    case YAML::NodeType::Map: {
      json out = json::object();
      std::set<std::string> seen;
      for (const auto& kv : node) {
        if (!kv.first.IsScalar())
          return InvalidArgument((path.empty() ? "" : path + ": ") + "keys must be plain text");
        const std::string key = kv.first.Scalar();
        const std::string sub = path.empty() ? key : path + "." + key;
        // yaml-cpp keeps both copies of a repeated key; silently taking one would hide a typo.
        if (!seen.insert(key).second) return InvalidArgument(sub + ": key appears twice");
        ASSIGN_OR_RETURN(out[key], Convert(kv.second, sub, depth + 1));
      }
      return out;
    }
  }
  return json(nullptr);
}

void Emit(YAML::Emitter& out, const json& v) {
  if (v.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [k, item] : v.items()) {
      out << YAML::Key << k << YAML::Value;
      Emit(out, item);
    }
    out << YAML::EndMap;
  } else if (v.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : v) Emit(out, item);
    out << YAML::EndSeq;
  } else if (v.is_string()) {
    const std::string s = v.get<std::string>();
    // Quote what would read back as another type ("0.92", "true", "12").
    const bool ambiguous = s.empty() || IsInteger(s) || IsNullWord(s) || IsTrueWord(s) ||
                           IsFalseWord(s) ||
                           s.find_first_not_of("0123456789.-+eE") == std::string::npos;
    // yaml-cpp prints a string with a carriage return plain, and a trailing one is lost on
    // reading (admin_yaml_fuzz): control characters go in double quotes, escaped.
    const bool control = std::any_of(s.begin(), s.end(), [](char c) {
      return static_cast<unsigned char>(c) < 0x20 && c != '\n';
    });
    if (ambiguous || control) out << YAML::DoubleQuoted;
    out << s;
  } else if (v.is_null()) {
    out << YAML::Null;
  } else {
    out << v.dump();  // numbers and booleans: JSON's spelling is YAML's
  }
}

// U+FDD0..U+FDEF and the last two code points of each plane, in UTF-8 text.
bool HasNoncharacter(const std::string& s) {
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
    if (b(0) == 0xEF && i + 2 < s.size()) {
      if (b(1) == 0xB7 && b(2) >= 0x90 && b(2) <= 0xAF) return true;      // U+FDD0..U+FDEF
      if (b(1) == 0xBF && (b(2) == 0xBE || b(2) == 0xBF)) return true;     // U+FFFE, U+FFFF
    } else if (b(0) >= 0xF0 && b(0) <= 0xF4 && i + 3 < s.size()) {
      // U+nFFFE and U+nFFFF: the plane's last 16 bits all ones but the lowest.
      if ((b(1) & 0x0F) == 0x0F && b(2) == 0xBF && (b(3) == 0xBE || b(3) == 0xBF)) return true;
    }
  }
  return false;
}

bool HasNoncharacter(const json& v) {
  if (v.is_string()) return HasNoncharacter(v.get_ref<const std::string&>());
  if (v.is_object()) {
    for (const auto& [k, item] : v.items())
      if (HasNoncharacter(k) || HasNoncharacter(item)) return true;
  } else if (v.is_array()) {
    for (const auto& item : v)
      if (HasNoncharacter(item)) return true;
  }
  return false;
}

}  // namespace

StatusOr<json> YamlToJson(const std::string& text) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return InvalidArgument("not valid YAML: line " + std::to_string(e.mark.line + 1) +
                           ", column " + std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  return Convert(root, "", 0);
}

std::string JsonToYaml(const json& value) {
  YAML::Emitter out;
  Emit(out, value);
  // yaml-cpp's emitter replaces Unicode noncharacters (U+FFFF, U+FDD0...) in a quoted
  // string with U+FFFD (admin_yaml_fuzz found it). Such a value is printed as JSON, which is
  // YAML too and which yaml-cpp reads back faithfully.
  if (HasNoncharacter(value)) return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
  return std::string(out.c_str()) + "\n";
}

}  // namespace frugal::cli
