#include "tests/api/openapi_spec.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <regex>

namespace frugal::testing {

using nlohmann::json;

namespace {

json ToJson(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: {
      json out = json::object();
      for (const auto& kv : n) out[kv.first.as<std::string>()] = ToJson(kv.second);
      return out;
    }
    case YAML::NodeType::Sequence: {
      json out = json::array();
      for (const auto& v : n) out.push_back(ToJson(v));
      return out;
    }
    case YAML::NodeType::Scalar: {
      const std::string s = n.Scalar();
      if (n.Tag() == "!") return s;  // quoted: always a string
      if (s == "true") return true;
      if (s == "false") return false;
      if (s == "null" || s == "~") return nullptr;
      static const std::regex kInt("-?[0-9]+"), kFloat("-?[0-9]+\\.[0-9]+");
      if (std::regex_match(s, kInt)) return std::stoll(s);
      if (std::regex_match(s, kFloat)) return std::stod(s);
      return s;
    }
    default: return nullptr;
  }
}

const json* Resolve(const json& spec, const std::string& ref) {
  if (ref.rfind("#/", 0) != 0) return nullptr;
  const json* node = &spec;
  size_t start = 2;
  while (start <= ref.size()) {
    size_t slash = ref.find('/', start);
    if (slash == std::string::npos) slash = ref.size();
    const std::string key = ref.substr(start, slash - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    start = slash + 1;
  }
  return node;
}

bool HasType(const json& v, const std::string& t) {
  if (t == "null") return v.is_null();
  if (t == "boolean") return v.is_boolean();
  if (t == "integer") return v.is_number_integer();
  if (t == "number") return v.is_number();
  if (t == "string") return v.is_string();
  if (t == "array") return v.is_array();
  if (t == "object") return v.is_object();
  return false;
}

// Property names a schema (with its allOf parts) declares: for unevaluatedProperties.
void DeclaredProperties(const json& spec, const json& schema, std::set<std::string>& out) {
  const json& s = schema.contains("$ref") ? *Resolve(spec, schema["$ref"]) : schema;
  if (s.contains("properties"))
    for (auto it = s["properties"].begin(); it != s["properties"].end(); ++it) out.insert(it.key());
  if (s.contains("allOf"))
    for (const auto& part : s["allOf"]) DeclaredProperties(spec, part, out);
}

}  // namespace

json LoadOpenApi(const std::string& yaml_text) { return ToJson(YAML::Load(yaml_text)); }

std::string NormalisePath(const std::string& path) {
  static const std::regex kParam(R"(\{[^}/]*\}|\(\[\^/\]\+\))");
  return std::regex_replace(path, kParam, "{}");
}

std::set<std::pair<std::string, std::string>> SpecOperations(const json& spec) {
  std::set<std::pair<std::string, std::string>> out;
  for (auto p = spec["paths"].begin(); p != spec["paths"].end(); ++p) {
    for (auto m = p.value().begin(); m != p.value().end(); ++m) {
      static const std::set<std::string> kMethods = {"get", "post", "put", "patch", "delete",
                                                     "head", "options"};
      if (!kMethods.count(m.key())) continue;  // path-level "parameters"
      std::string method = m.key();
      std::transform(method.begin(), method.end(), method.begin(), ::toupper);
      out.insert({method, NormalisePath(p.key())});
    }
  }
  return out;
}

std::set<std::string> BrokenRefs(const json& spec) {
  std::set<std::string> broken;
  std::vector<const json*> todo = {&spec};
  while (!todo.empty()) {
    const json* n = todo.back();
    todo.pop_back();
    if (n->is_object()) {
      if (n->contains("$ref") && (*n)["$ref"].is_string() && !Resolve(spec, (*n)["$ref"]))
        broken.insert((*n)["$ref"].get<std::string>());
      for (const auto& v : *n) todo.push_back(&v);
    } else if (n->is_array()) {
      for (const auto& v : *n) todo.push_back(&v);
    }
  }
  return broken;
}

std::string SchemaViolation(const json& spec, const json& schema_in, const json& v,
                            const std::string& where) {
  const json* resolved = schema_in.contains("$ref") ? Resolve(spec, schema_in["$ref"]) : &schema_in;
  if (!resolved) return where + ": unresolved $ref";
  const json& s = *resolved;
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_array()) {
      for (const auto& t : s["type"]) ok = ok || HasType(v, t);
    } else {
      ok = HasType(v, s["type"]);
    }
    if (!ok) return where + ": expected type " + s["type"].dump() + ", got " + v.dump().substr(0, 80);
  }
  if (s.contains("const") && v != s["const"]) return where + ": expected " + s["const"].dump();
  if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
    return where + ": " + v.dump() + " not in " + s["enum"].dump();
  if (s.contains("allOf")) {
    for (const auto& part : s["allOf"])
      if (auto e = SchemaViolation(spec, part, v, where); !e.empty()) return e;
  }
  for (const char* key : {"anyOf", "oneOf"}) {
    if (!s.contains(key)) continue;
    int matches = 0;
    std::string last;
    for (const auto& part : s[key]) {
      auto e = SchemaViolation(spec, part, v, where);
      matches += e.empty();
      if (!e.empty()) last = e;
    }
    if (matches == 0) return last;
    if (std::string(key) == "oneOf" && matches > 1) return where + ": matches several oneOf";
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const auto& r : s["required"])
        if (!v.contains(r.get<std::string>())) return where + ": missing " + r.get<std::string>();
    for (auto it = v.begin(); it != v.end(); ++it) {
      const std::string at = where + "." + it.key();
      if (s.contains("properties") && s["properties"].contains(it.key())) {
        if (auto e = SchemaViolation(spec, s["properties"][it.key()], it.value(), at); !e.empty())
          return e;
      } else if (s.contains("additionalProperties")) {
        const json& extra = s["additionalProperties"];
        if (extra.is_boolean() && !extra.get<bool>()) return at + ": not in the schema";
        if (extra.is_object())
          if (auto e = SchemaViolation(spec, extra, it.value(), at); !e.empty()) return e;
      }
    }
    if (s.contains("unevaluatedProperties") && s["unevaluatedProperties"] == false) {
      std::set<std::string> declared;
      DeclaredProperties(spec, s, declared);
      for (auto it = v.begin(); it != v.end(); ++it)
        if (!declared.count(it.key())) return where + "." + it.key() + ": not in the schema";
    }
  }
  if (v.is_array() && s.contains("items")) {
    for (size_t i = 0; i < v.size(); ++i)
      if (auto e = SchemaViolation(spec, s["items"], v[i], where + "[" + std::to_string(i) + "]");
          !e.empty())
        return e;
  }
  return "";
}

json ResponseSchema(const json& spec, const std::string& method, const std::string& path,
                    int status) {
  json r = spec.at("paths").at(path).at(method).at("responses").at(std::to_string(status));
  if (r.contains("$ref")) r = *Resolve(spec, r["$ref"]);
  return r.at("content").at("application/json").at("schema");
}

}  // namespace frugal::testing
