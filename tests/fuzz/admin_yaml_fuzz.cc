// Fuzzes the cluster file of `frugal admin apply -f FILE` (cli/yaml_json.h): YAML to JSON,
// and the way back that `frugal admin get -o yaml` prints. What it prints must read back
// as the same JSON, or an admin who saves and re-applies it changes their cluster.
#include <cstddef>
#include <cstdint>
#include <cstdio>

#include "cli/yaml_json.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  auto doc = cli::YamlToJson(fuzz::AsText(data, size));
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
