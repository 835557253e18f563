#include "worker/uid_sweep.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace frugal::worker {

std::set<uid_t> UidsWithProcesses() {
  std::set<uid_t> out;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return out;
  const int proc_fd = dirfd(proc);
  // A status file is about 1.5 KB; State and Uid are in its first lines whatever the name.
  char text[4096];
  while (const dirent* e = readdir(proc)) {
    if (e->d_name[0] < '1' || e->d_name[0] > '9') continue;  // pids only
    char path[300];
    snprintf(path, sizeof path, "%s/status", e->d_name);
    const int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;  // gone meanwhile
    ssize_t n;
    do {
      n = read(fd, text, sizeof text - 1);
    } while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    if (const char* s = strstr(text, "\nState:")) {
      s += 7;
      while (*s == ' ' || *s == '\t') ++s;
      if (*s == 'Z') continue;
    }
    const char* uids = strstr(text, "\nUid:");
    if (uids == nullptr) continue;
    // Real, effective, saved, filesystem: any of them marks the uid as in use.
    const char* p = uids + 5;
    for (int i = 0; i < 4; ++i) {
      char* end = nullptr;
      const unsigned long u = strtoul(p, &end, 10);
      if (end == p) break;
      out.insert(static_cast<uid_t>(u));
      p = end;
    }
  }
  closedir(proc);
  return out;
}

void KillAllOf(uid_t uid) {
  // kill(-1) from a process whose real uid is `uid` reaches exactly the processes the kernel
  // lets that user signal (its own), never the worker or anyone else's. Repeated because a
  // process may fork while we kill.
  for (int round = 0; round < 3; ++round) {
    AsUser(uid, uid, [] {
      kill(-1, SIGKILL);
      return 0;
    });
    if (!UidsWithProcesses().count(uid)) return;
  }
}

}  // namespace frugal::worker
