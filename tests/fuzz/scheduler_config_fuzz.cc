// Fuzzes frugal-scheduler's settings file: the YAML reader shared with the worker
// (config/yaml_settings) and every key's parser, local_workers included.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "config/config.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  const std::string path = fuzz::WriteScratchFile(fuzz::AsText(data, size));
  // No environment: only the file decides.
  auto config = config::LoadSchedulerConfig(
      path, [](const std::string&) { return std::optional<std::string>(); });
  if (!config.ok()) {
    fuzz::Require(!config.status().message().empty(), "a rejected file says why");
  }
  return 0;
}
