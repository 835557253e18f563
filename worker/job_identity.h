// Who a job runs as (decision 0019). Jobs are other teams' code: they must not read the
// worker's credentials or another job's files, and must not outlive their attempt.
//
// When the worker runs as root, each attempt runs under a uid of its own, taken from
// `job_uids` (a range no other software on the node uses), with the primary group of
// `job_user` (the dedicated account scripts/setup creates). Two jobs on one node then cannot
// read each other's /proc entries, environment or spool, nor signal each other, and
// everything an attempt left running can be found and killed by its uid. When the worker
// is not root, jobs run as the worker's own user: the worker makes itself non-dumpable, so
// a job cannot read it through /proc, but jobs can read each other's files (docs/security.md).
//
// Threading: not thread-safe; owned by the agent's thread.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/uid_sweep.h"

namespace frugal::worker {

// The credentials one attempt runs with. Unset: the worker's own.
struct JobIdentity {
  uid_t uid = 0;
  gid_t gid = 0;
  bool own_uid = false;  // no other attempt runs as uid: everything under it is this attempt's
};

class JobUsers {
 public:
  // `job_user`: name of the account whose primary group jobs run with (and whose uid they
  // run as without `uid_range`). `uid_range`: "FIRST-LAST", or empty for the job_user's
  // uid alone. Both empty: jobs run as the worker (only allowed when not root).
  // InvalidArgument (field job_user / job_uids) when the user does not exist or the range is
  // malformed, or when root would run jobs as root.
  static StatusOr<JobUsers> Create(const std::string& job_user, const std::string& uid_range);

  // Whether jobs run under other credentials than the worker's.
  bool switches_user() const { return !uids_.empty(); }
  // Whether each attempt gets its own uid (and so may be swept by it).
  bool per_attempt() const { return uids_.size() > 1; }

  // A uid for a new attempt: the lowest in the range that no attempt on this host holds (a
  // lock file per uid under kUidLockDir, held while the attempt runs, so several workers on
  // one host never share one) and under which no process runs. nullopt when jobs run as the worker. ResourceExhausted-like
  // FailedPrecondition when every uid is taken.
  // `busy`: the uids with processes, if the caller scanned them already (one scan of /proc
  // for many acquisitions in a row); otherwise Acquire scans.
  StatusOr<std::optional<JobIdentity>> Acquire(const std::set<uid_t>* busy = nullptr);
  void Release(uid_t uid);
  // An identity jobs may run as, without taking it (to check what jobs can reach).
  std::optional<JobIdentity> Sample() const;

  // Kills every process of every uid in the range that no live attempt on this host holds
  // (a previous life's jobs; other workers' running attempts hold their locks). Returns how
  // many uids had processes. Only when per_attempt().
  int SweepAll();

  // Kills every process running as `uid` (setsid escapees included), if it is a uid of the
  // range that this worker holds, or that no one on this host holds.
  void Sweep(uid_t uid);
  // Sweep() for each of `uids` with one scan of /proc: only a uid that still has processes
  // costs more (the kill and its rescans).
  void Sweep(const std::vector<uid_t>& uids);

  // Ok when a process with `id` can reach (search) `path`; otherwise FailedPrecondition
  // naming the path and what to change.
  Status CheckReachable(const std::optional<JobIdentity>& id, const std::string& path) const;

 private:
  std::vector<uid_t> uids_;  // empty: the worker's own
  gid_t gid_ = 0;
  bool Lock(uid_t uid);  // takes the host-wide lock of `uid` into held_
  void Unlock(uid_t uid);

  std::map<uid_t, int> held_;  // uid -> the open, flocked lock file
};

// Where the per-uid lock files live (root only; a tmpfs, so a reboot clears them).
inline constexpr const char* kUidLockDir = "/run/frugal-worker/uids";

}  // namespace frugal::worker
