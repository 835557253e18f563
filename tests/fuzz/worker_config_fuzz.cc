// Fuzzes frugal-worker's settings file (worker/worker_config.h). CompleteWorkerConfig is
// left out: it reads the filesystem, and its inputs are what this loader already checked.
#include <cstddef>
#include <cstdint>
#include <optional>

#include "tests/fuzz/fuzz_util.h"
#include "worker/worker_config.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  const std::string path = fuzz::WriteScratchFile(fuzz::AsText(data, size));
  auto config = worker::LoadWorkerConfig(
      path, [](const std::string&) { return std::optional<std::string>(); });
  if (!config.ok()) {
    fuzz::Require(!config.status().message().empty(), "a rejected file says why");
  }
  return 0;
}
