#include "scheduler/provider/command.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace frugal::provider {

namespace {

constexpr size_t kMaxOut = 64 * 1024;
constexpr size_t kErrTail = 2048;

// Appends what `fd` has now; false at EOF or error (the caller stops polling it).
bool Drain(int fd, std::string& into, size_t cap, bool keep_tail) {
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
      into.append(buf, static_cast<size_t>(n));
      if (into.size() > cap) {
        if (keep_tail) into.erase(0, into.size() - cap);
        else into.resize(cap);
      }
      continue;
    }
    if (n < 0 && (errno == EINTR)) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    return false;  // EOF or a real error
  }
}

int ExitCode(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

}  // namespace

std::string CommandResult::Describe() const {
  std::string s;
  if (timed_out) s = "timed out";
  else if (exit_code < 0) s = "could not start";
  else s = "exit " + std::to_string(exit_code);
  std::string tail = err_tail;
  while (!tail.empty() && (tail.back() == '\n' || tail.back() == ' ')) tail.pop_back();
  if (!tail.empty()) s += ": " + tail;
  return s;
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                         const std::string& cwd, std::chrono::milliseconds timeout) {
  CommandResult res;
  if (argv.empty()) {
    res.err_tail = "no command";
    return res;
  }
  // Only our ends are non-blocking: a child writing to a non-blocking pipe fails (EAGAIN).
  int out[2], err[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    res.err_tail = std::string("pipe: ") + std::strerror(errno);
    return res;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    res.err_tail = std::string("pipe: ") + std::strerror(errno);
    close(out[0]);
    close(out[1]);
    return res;
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Its own session: a timeout's signal reaches every process it started, and none of them
  // gets the scheduler's terminal or signals. Default signal mask and dispositions.
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  std::vector<char*> args, envp;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, argv[0].c_str(), &fa, &attr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  close(out[1]);
  close(err[1]);
  if (rc != 0) {
    res.err_tail = argv[0] + ": " + std::strerror(rc);
    close(out[0]);
    close(err[0]);
    return res;
  }

  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  bool out_open = true, err_open = true;
  int status = 0;
  bool exited = false;
  while (!exited) {
    pollfd fds[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {err_open ? err[0] : -1, POLLIN, 0}};
    poll(fds, 2, 100);
    if (out_open) out_open = Drain(out[0], res.out, kMaxOut, false);
    if (err_open) err_open = Drain(err[0], res.err_tail, kErrTail, true);
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) exited = true;
    if (!exited && Clock::now() >= deadline) {
      res.timed_out = true;
      kill(-pid, SIGTERM);
      const auto hard = Clock::now() + std::chrono::seconds(5);
      while (waitpid(pid, &status, WNOHANG) == 0 && Clock::now() < hard) usleep(50 * 1000);
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      exited = true;
    }
  }
  // What it wrote before exiting; a process it left behind may keep the pipe open.
  if (out_open) Drain(out[0], res.out, kMaxOut, false);
  if (err_open) Drain(err[0], res.err_tail, kErrTail, true);
  close(out[0]);
  close(err[0]);
  res.exit_code = ExitCode(status);
  return res;
}

}  // namespace frugal::provider
