#include "tests/fuzz/fuzz_util.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace frugal::fuzz {

std::string WriteScratchFile(const std::string& text) {
  // One name per process: scripts/fuzz may run several targets side by side.
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/frugal_fuzz_" +
           std::to_string(::getpid()) + ".yaml";
  }();
  static const bool cleanup_registered = [] {
    std::atexit([] { ::unlink(path.c_str()); });
    return true;
  }();
  (void)cleanup_registered;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  return path;
}

void Require(bool condition, const char* what) {
  if (condition) return;
  std::fprintf(stderr, "fuzz: broken promise: %s\n", what);
  std::abort();
}

}  // namespace frugal::fuzz
