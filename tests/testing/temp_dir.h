// A temporary directory under /tmp, removed with its contents on destruction. World-
// searchable (0755) so that PostgreSQL, run as `postgres` when the tests run as root,
// can reach the directories inside it.
#pragma once

#include <string>

namespace frugal::testing {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "frugal-test");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace frugal::testing
