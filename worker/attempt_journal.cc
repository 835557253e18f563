#include "worker/attempt_journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

namespace frugal::worker {

namespace {

using nlohmann::json;

constexpr std::size_t kCompactFloor = 1024;  // lines below which the file is never rewritten
constexpr std::size_t kCompactRatio = 4;      // lines per live attempt above which it is

std::string PutLine(const AttemptState& s) {
  return json{{"put", AttemptStateJson(s)}}.dump() + "\n";
}

// Writes all of `data` to `fd`, retrying short writes and EINTR.
bool WriteAll(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

bool SyncDir(const std::string& dir) {
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = fsync(fd) == 0;
  close(fd);
  return ok;
}

}  // namespace

AttemptJournal::~AttemptJournal() {
  if (fd_ >= 0) close(fd_);
}

Status AttemptJournal::Open(const std::string& work_dir) {
  path_ = work_dir + "/attempts.journal";
  live_.clear();
  pending_.clear();
  lines_ = 0;
  bool torn = false;  // the last line has no newline: a crash cut it short
  {
    std::ifstream in(path_);
    std::string line;
    while (std::getline(in, line)) {
      ++lines_;
      torn = in.eof();
      // A line cut short by a crash, or anything else that is not a record, is skipped.
      const json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
      if (!j.is_object()) continue;
      if (auto put = j.find("put"); put != j.end()) {
        if (auto s = ParseAttemptState(*put)) live_[s->attempt_id] = *s;
      } else if (auto forget = j.find("forget");
                 forget != j.end() && forget->is_number_integer()) {
        live_.erase(forget->get<std::int64_t>());
      }
    }
  }
  RETURN_IF_ERROR(Reopen());
  if (torn) pending_ = "\n";  // so that the next record starts a line of its own
  if (!SyncDir(work_dir)) return Internal("cannot sync " + work_dir);  // the file's own entry
  // An older worker's files: into the journal, durably, before they are removed.
  const auto legacy = LoadLegacyAttemptStates(work_dir);
  for (const auto& [dir, s] : legacy) Put(s);
  RETURN_IF_ERROR(Sync());
  for (const auto& [dir, s] : legacy) {
    std::error_code ec;
    std::filesystem::remove(dir + "/state.json", ec);
  }
  return Status::Ok();
}

Status AttemptJournal::Reopen() {
  if (fd_ >= 0) close(fd_);
  fd_ = open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) return Internal("cannot open " + path_ + ": " + std::strerror(errno));
  return Status::Ok();
}

void AttemptJournal::Put(const AttemptState& s) {
  live_[s.attempt_id] = s;
  pending_ += PutLine(s);
}

void AttemptJournal::Forget(std::int64_t attempt_id) {
  if (live_.erase(attempt_id) == 0) return;
  pending_ += json{{"forget", attempt_id}}.dump() + "\n";
}

Status AttemptJournal::Sync() {
  if (path_.empty() || pending_.empty()) return Status::Ok();
  if (fd_ < 0) RETURN_IF_ERROR(Reopen());
  const std::size_t added =
      static_cast<std::size_t>(std::count(pending_.begin(), pending_.end(), '\n'));
  if (lines_ + added > kCompactFloor && lines_ + added > kCompactRatio * live_.size() &&
      Compact().ok()) {
    return Status::Ok();
  }
  // A short write may leave part of a line: a newline first makes sure the next record
  // starts on a line of its own (an empty line is skipped when read).
  if (!WriteAll(fd_, pending_) || fdatasync(fd_) != 0) {
    const std::string why = std::strerror(errno);
    WriteAll(fd_, "\n");
    ++lines_;
    return Internal("cannot write " + path_ + ": " + why);
  }
  lines_ += added;
  pending_.clear();
  return Status::Ok();
}

Status AttemptJournal::Compact() {
  const std::string tmp = path_ + ".tmp";
  std::string text;
  for (const auto& [id, s] : live_) text += PutLine(s);
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Internal("cannot write " + tmp + ": " + std::strerror(errno));
  const bool ok = WriteAll(fd, text) && fsync(fd) == 0;
  close(fd);
  const std::string dir = std::filesystem::path(path_).parent_path().string();
  if (!ok || rename(tmp.c_str(), path_.c_str()) != 0 || !SyncDir(dir)) {
    unlink(tmp.c_str());
    return Internal("cannot rewrite " + path_);
  }
  pending_.clear();
  lines_ = live_.size();
  (void)Reopen();  // the records are durable; failing, the next Sync opens it again
  return Status::Ok();
}

}  // namespace frugal::worker
