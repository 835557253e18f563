// Fuzzes the checkpoint spool's report files (protocol/spool.h): `frugal checkpoint` writes
// them inside the job, so a job (or a full disk) controls their bytes and the worker reads
// them. An accepted report must satisfy the writer's checks and encode to JSON.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_util.h"
#include "protocol/spool.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  auto report = protocol::ParseCheckpointReport(fuzz::AsText(data, size));
  if (!report.ok()) {
    fuzz::Require(!report.status().message().empty(), "a rejected report says why");
    return 0;
  }
  fuzz::Require(report->step >= 0 && !report->uri.empty() && report->size_bytes >= 0 &&
                    report->progress >= 0 && report->progress <= 1,
                "an accepted report passes the checks its writer makes");
  (void)protocol::ToJson(*report).dump();
  return 0;
}
