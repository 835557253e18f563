// Fuzzes the cluster file of `frugal admin apply -f FILE` (cli/yaml_json.h): YAML to JSON,
// and the way back that `frugal admin get -o yaml` prints. What it prints must read back
// as the same JSON, or an admin who saves and re-applies it changes their cluster.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "cli/yaml_json.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

// YAML allows at most 1024 characters in an implicit `key:` and yaml-cpp's emitter does not
// switch to `? key` beyond that, so such keys (counted as printed, where a control byte
// becomes \x01) do not read back. The API's keys are field, pool and team names of at most
// 128 characters: the round trip is checked for keys up to 200 bytes (800 printed at most).
std::size_t LongestKey(const nlohmann::json& j) {
  std::size_t longest = 0;
  if (j.is_object()) {
    for (const auto& [k, v] : j.items()) longest = std::max({longest, k.size(), LongestKey(v)});
  } else if (j.is_array()) {
    for (const auto& v : j) longest = std::max(longest, LongestKey(v));
  }
  return longest;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  const std::string text = fuzz::AsText(data, size);
  auto doc = cli::YamlToJson(text);
  if (!doc.ok()) {
    fuzz::Require(!doc.status().message().empty(), "a rejected file says why");
    return 0;
  }
  // Text that is not UTF-8 has no JSON spelling; the scheduler never sends it back.
  try {
    (void)doc->dump();
  } catch (const nlohmann::json::type_error&) {
    return 0;
  }
  // A NUL byte makes yaml-cpp read the file as UTF-16 or UTF-32, where a dangling odd byte
  // decodes differently each time; `admin get` prints UTF-8, so the round trip starts there.
  if (LongestKey(*doc) > 200 || text.find('\0') != std::string::npos) return 0;
  const std::string printed = cli::JsonToYaml(*doc);
  auto again = cli::YamlToJson(printed);
  if (!again.ok() || *again != *doc) {
    std::fprintf(stderr, "JSON:\n%s\nprinted:\n%s\nread back: %s\n", doc->dump().c_str(),
                 printed.c_str(),
                 again.ok() ? again->dump().c_str() : again.status().ToString().c_str());
  }
  fuzz::Require(again.ok(), "printed YAML reads back");
  fuzz::Require(*again == *doc, "printed YAML reads back as the same JSON");
  return 0;
}
