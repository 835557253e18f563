// Helpers shared by the libFuzzer targets in tests/fuzz (docs/fuzzing.md): the input as
// text, and a scratch file for loaders that only read paths.
//
// Contract of every target: any input may be rejected with a Status, but nothing may crash,
// leak, overflow or trip a sanitizer. A target aborts (a libFuzzer finding) only when a
// property the code promises does not hold, e.g. a rejection without a message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace frugal::fuzz {

inline std::string AsText(const std::uint8_t* data, std::size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Writes `text` to one file per process (under $TMPDIR or /tmp) and returns its path. The
// config loaders take a path, not text; libFuzzer runs inputs one at a time per process,
// so reusing the file is safe.
std::string WriteScratchFile(const std::string& text);

// Aborts (so libFuzzer records the input) when `condition` is false; `what` names the
// broken promise on stderr.
void Require(bool condition, const char* what);

}  // namespace frugal::fuzz
