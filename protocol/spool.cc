#include "protocol/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace frugal::protocol {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr const char* kSuffix = ".json";

Status Errno(const std::string& what, const std::string& path) {
  return Internal(what + " " + path + ": " + strerror(errno));
}

Status WriteAll(int fd, const std::string& data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno("cannot write", path);
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

// Data, then the rename, must reach the disk before the report can be forwarded: the
// scheduler treats a committed checkpoint as something a later attempt can resume from.
Status WriteDurably(const std::string& path, const std::string& data) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno("cannot create", path);
  Status st = WriteAll(fd, data, path);
  if (st.ok() && fsync(fd) != 0) st = Errno("cannot fsync", path);
  close(fd);
  return st;
}

void SyncDirectory(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // best effort: the rename itself already happened
  fsync(fd);
  close(fd);
}

std::string FileName(std::int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "%020lld", static_cast<long long>(step));
  return std::string(name) + kSuffix;
}

}  // namespace

Status WriteCheckpointReport(const std::string& spool_dir, const CheckpointReport& r) {
  if (r.step < 0) return InvalidArgument("step must not be negative", "step");
  if (!(r.progress >= 0 && r.progress <= 1)) {
    return InvalidArgument("progress must be between 0 and 1", "progress");
  }
  if (r.uri.empty()) return InvalidArgument("uri must not be empty", "uri");
  if (r.size_bytes < 0) return InvalidArgument("size must not be negative", "size_bytes");
  std::error_code ec;
  if (!fs::is_directory(spool_dir, ec)) {
    return FailedPrecondition("spool " + spool_dir + " does not exist");
  }

  json report = ToJson(r);
  report["secret"] = r.secret;
  const std::string final_path = spool_dir + "/" + FileName(r.step);
  // The pid keeps two writers of the same step from sharing a temporary.
  const std::string tmp_path = final_path + "." + std::to_string(getpid()) + ".tmp";
  RETURN_IF_ERROR(WriteDurably(tmp_path, report.dump() + "\n"));
  if (rename(tmp_path.c_str(), final_path.c_str()) != 0) {
    Status st = Errno("cannot rename into", final_path);
    unlink(tmp_path.c_str());
    return st;
  }
  SyncDirectory(spool_dir);
  return Status::Ok();
}

StatusOr<CheckpointReport> ParseCheckpointReport(const std::string& text) {
  const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return InvalidArgument("not a JSON object");
  const auto step = j.find("step");
  const auto progress = j.find("progress");
  const auto uri = j.find("uri");
  const auto size = j.find("size_bytes");
  const auto secret = j.find("secret");
  if (step == j.end() || !step->is_number_integer() || step->get<std::int64_t>() < 0) {
    return InvalidArgument("step: a non-negative integer is required", "step");
  }
  if (uri == j.end() || !uri->is_string() || uri->get<std::string>().empty()) {
    return InvalidArgument("uri: a non-empty string is required", "uri");
  }
  CheckpointReport r;
  r.step = step->get<std::int64_t>();
  r.uri = uri->get<std::string>();
  if (progress != j.end()) {
    if (!progress->is_number()) return InvalidArgument("progress: not a number", "progress");
    r.progress = progress->get<double>();
    if (!(r.progress >= 0 && r.progress <= 1)) {
      return InvalidArgument("progress: must be between 0 and 1", "progress");
    }
  }
  if (size != j.end()) {
    if (!size->is_number_integer() || size->get<std::int64_t>() < 0) {
      return InvalidArgument("size_bytes: a non-negative integer is required", "size_bytes");
    }
    r.size_bytes = size->get<std::int64_t>();
  }
  if (secret != j.end()) {
    if (!secret->is_string()) return InvalidArgument("secret: not a string", "secret");
    r.secret = secret->get<std::string>();
  }
  return r;
}

json ToJson(const CheckpointReport& r) {
  return {{"step", r.step}, {"progress", r.progress}, {"uri", r.uri}, {"size_bytes", r.size_bytes}};
}

std::vector<SpoolEntry> ListSpool(const std::string& spool_dir) {
  std::vector<SpoolEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(spool_dir, ec)) {
    const std::string name = e.path().filename().string();
    const size_t n = name.size(), k = std::char_traits<char>::length(kSuffix);
    if (n <= k || name.compare(n - k, k, kSuffix) != 0) continue;  // temporaries, strays
    SpoolEntry entry;
    entry.path = e.path().string();
    std::ifstream in(entry.path);
    std::stringstream text;
    text << in.rdbuf();
    auto report = ParseCheckpointReport(text.str());
    if (report.ok()) {
      entry.report = std::move(report).value();
    } else {
      entry.status = report.status();
    }
    out.push_back(std::move(entry));
  }
  std::sort(out.begin(), out.end(), [](const SpoolEntry& a, const SpoolEntry& b) {
    if (a.status.ok() != b.status.ok()) return !a.status.ok();
    return a.report.step != b.report.step ? a.report.step < b.report.step : a.path < b.path;
  });
  return out;
}

}  // namespace frugal::protocol
