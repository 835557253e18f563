// The dashboard's static files (web/), embedded into the binary at build time by
// cmake/embed_files.cmake, so frugal-scheduler serves them whatever its working directory.
#pragma once

#include <string>
#include <vector>

namespace frugal::api {

struct EmbeddedFile {
  std::string name;  // file name without directory, e.g. "app.js"
  std::string text;
};

// Every file of web/, in the order CMakeLists.txt lists them.
const std::vector<EmbeddedFile>& WebFiles();

}  // namespace frugal::api
