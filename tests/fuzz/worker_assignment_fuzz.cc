// Fuzzes the worker's decoding of an assignment from a heartbeat reply
// (protocol/worker_protocol.h ParseStartOrder): the scheduler is trusted, but a proxy, a version skew
// or a bug there must give the worker an error, not a crash.
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "tests/fuzz/fuzz_util.h"
#include "protocol/worker_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  // Parse without exceptions, as the client does: bad JSON never reaches the decoder.
  auto j = nlohmann::json::parse(fuzz::AsText(data, size), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  auto a = protocol::ParseStartOrder(j);
  if (a.ok()) {
    fuzz::Require(a->attempt_id >= 1 && a->gpus >= 0 && !a->command.empty(),
                  "an accepted assignment has an attempt id, gpus >= 0 and a command");
  } else {
    fuzz::Require(!a.status().message().empty(), "a rejected assignment says why");
  }
  return 0;
}
