// Fuzzes the path of an untrusted POST /v1/jobs body before it reaches the store: the size
// and depth limits, the JSON parser, the job-spec decoder and the error encoder.
#include <cstddef>
#include <cstdint>

#include "api/codec_jobs.h"
#include "api/json_limits.h"
#include "tests/fuzz/fuzz_util.h"


extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace frugal;
  const std::string body = fuzz::AsText(data, size);
  Status limits = api::CheckJsonLimits(body);
  if (!limits.ok()) {
    fuzz::Require(!limits.message().empty(), "a limit error has a message");
    (void)api::EncodeError(limits).dump();
    return 0;
  }
  auto object = api::ParseObject(body);
  if (!object.ok()) {
    (void)api::EncodeError(object.status()).dump();
    return 0;
  }
  fuzz::Require(object->is_object(), "ParseObject returns an object");
  auto spec = api::DecodeJobSpec(*object);
  if (!spec.ok()) {
    fuzz::Require(!spec.status().message().empty(), "a rejected spec says why");
    // The reply body must serialise: invalid UTF-8 in a message would throw here.
    (void)api::EncodeError(spec.status()).dump();
  }
  return 0;
}
