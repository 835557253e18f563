#include "common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace frugal {

StatusOr<SubprocessResult> RunSubprocess(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgument("empty command");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return Unavailable("cannot start " + argv[0] + ": " + strerror(rc));
  }
  SubprocessResult result;
  char buf[4096];
  // Read until EOF even past the cap, so the child never blocks on a full pipe. A child
  // that daemonises (pg_ctl start) must not keep our pipe open: callers redirect its log.
  for (;;) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (result.output.size() < 65536) result.output.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return result;
}

StatusOr<SubprocessResult> RunSubprocessAs(const std::string& user,
                                           const std::vector<std::string>& argv) {
  if (user.empty() || geteuid() != 0) return RunSubprocess(argv);
  std::vector<std::string> wrapped = {"runuser", "-u", user, "--"};
  wrapped.insert(wrapped.end(), argv.begin(), argv.end());
  return RunSubprocess(wrapped);
}

}  // namespace frugal
