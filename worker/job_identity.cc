#include "worker/job_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <string>

namespace frugal::worker {

namespace {

constexpr size_t kMaxUids = 65536;

StatusOr<std::pair<uid_t, uid_t>> ParseRange(const std::string& text) {
  const auto dash = text.find('-');
  auto number = [](std::string_view s, uid_t& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size() && !s.empty();
  };
  uid_t first = 0, last = 0;
  if (dash == std::string::npos || !number(std::string_view(text).substr(0, dash), first) ||
      !number(std::string_view(text).substr(dash + 1), last) || first == 0 || last < first ||
      last - first + 1 > kMaxUids) {
    return InvalidArgument("job_uids: 'FIRST-LAST', two uids above 0, at most " +
                               std::to_string(kMaxUids) + " of them, got '" +
                               text.substr(0, 64) + "'",
                           "job_uids");
  }
  return std::make_pair(first, last);
}

}  // namespace

StatusOr<JobUsers> JobUsers::Create(const std::string& job_user, const std::string& uid_range) {
  JobUsers out;
  if (job_user.empty() && uid_range.empty()) {
    if (geteuid() == 0) {
      return InvalidArgument("job_user: a worker running as root must run jobs as another user "
                             "(scripts/setup creates 'frugal-job')",
                             "job_user");
    }
    return out;
  }
  if (job_user.empty()) return InvalidArgument("job_user: required with job_uids", "job_user");
  if (geteuid() != 0) {
    return InvalidArgument("job_user: only a worker running as root can run jobs as '" +
                               job_user + "'; leave job_user and job_uids unset",
                           "job_user");
  }
  errno = 0;
  const passwd* pw = getpwnam(job_user.c_str());
  if (pw == nullptr) {
    return InvalidArgument("job_user: no user '" + job_user.substr(0, 64) +
                               "' on this node; create it (scripts/setup does: useradd --system "
                               "--no-create-home --shell /usr/sbin/nologin frugal-job) or name "
                               "another unprivileged user",
                           "job_user");
  }
  if (pw->pw_uid == 0 || pw->pw_gid == 0) {
    return InvalidArgument("job_user: '" + job_user + "' is root or in group root", "job_user");
  }
  out.gid_ = pw->pw_gid;
  if (uid_range.empty()) {
    out.uids_.push_back(pw->pw_uid);
    return out;
  }
  ASSIGN_OR_RETURN(auto range, ParseRange(uid_range));
  for (uid_t u = range.first;; ++u) {
    out.uids_.push_back(u);
    if (u == range.second) break;
  }
  return out;
}

StatusOr<std::optional<JobIdentity>> JobUsers::Acquire(const std::set<uid_t>* busy) {
  if (uids_.empty()) return std::optional<JobIdentity>();
  if (!per_attempt()) return std::optional<JobIdentity>(JobIdentity{uids_[0], gid_, false});
  std::set<uid_t> scanned;
  if (busy == nullptr) {
    scanned = UidsWithProcesses();
    busy = &scanned;
  }
  for (uid_t u : uids_) {
    if (held_.count(u) || busy->count(u) || !Lock(u)) continue;
    return std::optional<JobIdentity>(JobIdentity{u, gid_, true});
  }
  return FailedPrecondition("every uid of job_uids is in use; widen the range");
}

void JobUsers::Release(uid_t uid) { Unlock(uid); }

bool JobUsers::Lock(uid_t uid) {
  std::error_code ec;
  std::filesystem::create_directories(kUidLockDir, ec);
  const std::string path = std::string(kUidLockDir) + "/" + std::to_string(uid);
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    close(fd);
    return false;
  }
  held_[uid] = fd;
  return true;
}

void JobUsers::Unlock(uid_t uid) {
  auto it = held_.find(uid);
  if (it == held_.end()) return;
  close(it->second);  // releases the flock
  held_.erase(it);
}

std::optional<JobIdentity> JobUsers::Sample() const {
  if (uids_.empty()) return std::nullopt;
  return JobIdentity{uids_.back(), gid_, per_attempt()};
}

int JobUsers::SweepAll() {
  if (!per_attempt()) return 0;
  int swept = 0;
  for (uid_t u : UidsWithProcesses()) {
    if (u < uids_.front() || u > uids_.back() || held_.count(u)) continue;
    if (!Lock(u)) continue;  // a live attempt of another worker on this host
    KillAllOf(u);
    Unlock(u);
    ++swept;
  }
  return swept;
}

void JobUsers::Sweep(uid_t uid) {
  if (!per_attempt() || uid < uids_.front() || uid > uids_.back()) return;
  if (held_.count(uid)) {
    KillAllOf(uid);
  } else if (Lock(uid)) {
    KillAllOf(uid);
    Unlock(uid);
  }
}

void JobUsers::Sweep(const std::vector<uid_t>& uids) {
  if (!per_attempt() || uids.empty()) return;
  const std::set<uid_t> busy = UidsWithProcesses();
  for (uid_t u : uids) {
    if (busy.count(u)) Sweep(u);
  }
}

Status JobUsers::CheckReachable(const std::optional<JobIdentity>& id,
                                const std::string& path) const {
  if (!id) return Status::Ok();
  const int rc = AsUser(id->uid, id->gid, [&] { return access(path.c_str(), X_OK) == 0 ? 0 : 1; });
  if (rc == 0) return Status::Ok();
  return FailedPrecondition("jobs run as uid " + std::to_string(id->uid) + " cannot reach " +
                            path + "; make every parent directory searchable by others (chmod o+x)");
}

}  // namespace frugal::worker
