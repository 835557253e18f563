// docs/openapi.yaml for tests: loaded as JSON, its (method, path) operations with path
// parameters normalised, and a small validator of JSON values against its schemas (type,
// enum, const, required, properties, additionalProperties, unevaluatedProperties, items,
// allOf, anyOf, oneOf, $ref) so real responses can be checked against the document.
#pragma once

#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <utility>

namespace frugal::testing {

// The YAML text as JSON (plain scalars true/false/null/numbers typed, quoted ones strings).
nlohmann::json LoadOpenApi(const std::string& yaml_text);

// "/v1/jobs/{id}" and "/v1/jobs/([^/]+)" both become "/v1/jobs/{}".
std::string NormalisePath(const std::string& path);

// Every (METHOD, normalised path) the document describes.
std::set<std::pair<std::string, std::string>> SpecOperations(const nlohmann::json& spec);

// Every "$ref" in the document that does not resolve (empty when all do).
std::set<std::string> BrokenRefs(const nlohmann::json& spec);

// Where `value` breaks `schema` (a schema object or {"$ref": ...}); empty when it conforms.
std::string SchemaViolation(const nlohmann::json& spec, const nlohmann::json& schema,
                            const nlohmann::json& value, const std::string& where = "$");

// The schema of the JSON response `status` of `method path` (path as in the document).
nlohmann::json ResponseSchema(const nlohmann::json& spec, const std::string& method,
                              const std::string& path, int status);

}  // namespace frugal::testing
