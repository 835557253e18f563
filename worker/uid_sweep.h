// Finding and killing every process of a job uid (decision 0019). Shared by the worker and
// frugal-keeper, so it uses nothing but the C library and the standard containers.
//
// Threading: the functions hold no state; AsUser forks, so call it from a single-threaded
// process or one whose other threads hold no locks the child needs.
#pragma once

#include <errno.h>
#include <grp.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>

namespace frugal::worker {

// Uids that have at least one process right now (from /proc): any of a process's real,
// effective, saved and filesystem uids. Zombies are left out: they hold nothing and cannot
// be killed (their parent reaps them).
std::set<uid_t> UidsWithProcesses();

// Kills (SIGKILL) every process whose real uid is `uid`, from a child that takes that uid,
// so the kernel's own permission rules bound what it can reach. Needs root.
void KillAllOf(uid_t uid);

// Runs `fn` in a forked child that has taken the credentials (uid, gid); the child's exit
// code, or -1 when it could not fork or the child did not exit.
template <typename Fn>
int AsUser(uid_t uid, gid_t gid, Fn fn) {
  const pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(uid) != 0) _exit(126);
    _exit(fn());
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace frugal::worker
