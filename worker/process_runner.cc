#include "worker/process_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

extern char** environ;

namespace frugal::worker {

namespace {

Status SpawnError(int rc, const std::string& program) {
  const std::string message = "cannot start '" + program + "': " + strerror(rc);
  switch (rc) {
    case ENOENT:
    case ENOTDIR:
      return NotFound(message);
    case EACCES:
    case EPERM:
      return Status(StatusCode::kPermissionDenied, message);
    default:
      return Internal(message);
  }
}

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (const auto& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The worker may ignore or catch signals (SIGPIPE, SIGUSR1, SIGTERM); a job starts with
// the defaults and an empty mask, as if run from a shell.
void DefaultSignals(posix_spawnattr_t& attr) {
  sigset_t defaults, empty;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGPIPE, SIGINT, SIGTERM, SIGUSR1, SIGUSR2, SIGHUP, SIGQUIT, SIGCHLD}) {
    sigaddset(&defaults, sig);
  }
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setsigmask(&attr, &empty);
}

// Length of the UTF-8 sequence starting at s[0] (n bytes available): > 0 when valid,
// 0 when invalid, -1 when valid so far but cut off. Follows RFC 3629 exactly (no overlong
// forms, no surrogates), which is what the JSON encoder insists on.
int SequenceLength(const unsigned char* s, size_t n) {
  const unsigned char c = s[0];
  if (c < 0x80) return 1;
  int len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  for (int i = 1; i < len; ++i) {
    if (static_cast<size_t>(i) >= n) return -1;
    const unsigned char b = s[i];
    if (i == 1 ? (b < lo || b > hi) : (b < 0x80 || b > 0xBF)) return 0;
  }
  return len;
}

// The program `name` would run as, searched in `path` the way a shell would, or "".
std::string ResolveProgram(const std::string& name, const std::string& path) {
  if (name.find('/') != std::string::npos) return name;
  size_t start = 0;
  while (start <= path.size()) {
    size_t colon = path.find(':', start);
    if (colon == std::string::npos) colon = path.size();
    const std::string dir = colon == start ? "." : path.substr(start, colon - start);
    const std::string candidate = dir + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

std::string PathOf(const std::vector<std::string>& env) {
  for (const auto& e : env) {
    if (e.rfind("PATH=", 0) == 0) return e.substr(5);
  }
  return "/usr/local/bin:/usr/bin:/bin";
}

// Async-signal-safe: a message to the job's output from a forked child.
void Say(int fd, const char* a, const char* b) {
  (void)!write(fd, a, strlen(a));
  (void)!write(fd, b, strlen(b));
  (void)!write(fd, "\n", 1);
}

volatile sig_atomic_t g_parent_died = 0;
void OnParentDied(int) { g_parent_died = 1; }

// The job itself, in the keeper's child: signals as a shell leaves them, its files, its
// credentials, then the program. Never returns.
[[noreturn]] void ExecJob(const SpawnSpec& spec, int out_fd, const std::string& program,
                          char* const* argv, char* const* envp) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &dfl, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
  prctl(PR_SET_PDEATHSIG, 0);
  const int in_fd = open("/dev/null", O_RDONLY);
  if (in_fd < 0 || dup2(in_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(out_fd, 2) < 0) _exit(126);
  if (spec.identity) {
    const gid_t gid = spec.identity->gid;
    if (setgroups(1, &gid) != 0 || setgid(gid) != 0 || setuid(spec.identity->uid) != 0) {
      Say(2, "[frugal-worker] cannot take the job's user: ", strerror(errno));
      _exit(126);
    }
  }
  if (chdir(spec.cwd.c_str()) != 0) {
    Say(2, "[frugal-worker] cannot enter the working directory: ", strerror(errno));
    _exit(126);
  }
  execve(program.c_str(), argv, envp);
  Say(2, "[frugal-worker] cannot start the command: ", strerror(errno));
  _exit(errno == ENOENT ? 127 : 126);
}

// Kills what the job left: with an own uid every process of it (setsid escapees too), then
// the keeper's group, the keeper included.
[[noreturn]] void KillJobAndDie(const SpawnSpec& spec) {
  if (spec.identity && spec.identity->own_uid) KillAllOf(spec.identity->uid);
  kill(0, SIGKILL);
  _exit(137);
}

// The keeper: see SpawnSpec::keeper. Exits as the job did, so the caller reads the job's
// exit code or signal from the keeper's status.
[[noreturn]] void RunKeeper(const SpawnSpec& spec, pid_t worker, int out_fd,
                            const std::string& program, char* const* argv, char* const* envp) {
  setpgid(0, 0);
  signal(SIGCHLD, SIG_DFL);  // the worker's handler wakes the worker, not the keeper
  struct sigaction sa {};
  sa.sa_handler = OnParentDied;  // no SA_RESTART: the wait below returns EINTR
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, nullptr);
  // The worker stops a job by signalling its group; the keeper outlasts SIGTERM and the
  // like to report how the job ended (SIGKILL still ends it).
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE}) signal(sig, SIG_IGN);
  prctl(PR_SET_PDEATHSIG, SIGUSR2);
  if (getppid() != worker) KillJobAndDie(spec);  // the worker died before the request
  // Orphans of the job become the keeper's children, so it reaps them, not init.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);  // the keeper re-raises the job's signal below
  const pid_t job = fork();
  if (job < 0) _exit(126);
  if (job == 0) ExecJob(spec, out_fd, program, argv, envp);
  close(out_fd);
  for (;;) {
    if (g_parent_died) KillJobAndDie(spec);
    int status = 0;
    const pid_t done = waitpid(-1, &status, 0);
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) _exit(126);  // no children left without the job's status: cannot happen
    if (done != job) continue;  // a reparented orphan
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    const int sig = WTERMSIG(status);
    signal(sig, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, sig);
    sigprocmask(SIG_UNBLOCK, &only, nullptr);
    kill(getpid(), sig);
    _exit(128 + sig);  // a signal that does not end a process by default
  }
}

StatusOr<pid_t> StartKept(const SpawnSpec& spec) {
  const std::string program = ResolveProgram(spec.argv[0], PathOf(spec.env));
  if (program.empty()) return NotFound("cannot start '" + spec.argv[0] + "': not found in PATH");
  // Everything the children need is built before fork: they only make system calls.
  auto argv = CStrings(spec.argv);
  auto envp = CStrings(spec.env);
  const int out_fd = open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out_fd < 0) return Internal("cannot open " + spec.output_path + ": " + strerror(errno));
  // The job's copy must survive exec; the worker's closes below.
  const int job_fd = fcntl(out_fd, F_DUPFD, 3);
  close(out_fd);
  if (job_fd < 0) return Internal(std::string("cannot duplicate the output: ") + strerror(errno));
  const pid_t worker = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    close(job_fd);
    return Internal(std::string("cannot fork: ") + strerror(errno));
  }
  if (pid == 0) RunKeeper(spec, worker, job_fd, program, argv.data(), envp.data());
  close(job_fd);
  // Also here, so a signal sent to the group right away cannot miss it.
  setpgid(pid, pid);
  return pid;
}

}  // namespace

StatusOr<pid_t> PosixProcessRunner::Start(const SpawnSpec& spec) {
  if (spec.argv.empty()) return InvalidArgument("empty command", "command");
  if (spec.keeper || spec.identity) return StartKept(spec);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addchdir_np(&actions, spec.cwd.c_str());
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, spec.output_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // Group id 0: the child leads a new group whose id is its pid, so kill(-pid) reaches
  // everything the job starts, and a terminal's Ctrl-C reaches only the worker.
  posix_spawnattr_setpgroup(&attr, 0);
  DefaultSignals(attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  auto argv = CStrings(spec.argv);
  auto envp = CStrings(spec.env);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return SpawnError(rc, spec.argv[0]);
  return pid;
}

void PosixProcessRunner::SignalGroup(pid_t pgid, int signal) {
  // kill(0) and kill(-1) would hit the worker's own group or every process we may signal.
  if (pgid > 1) kill(-pgid, signal);
}

ReapResult PosixProcessRunner::Reap(pid_t pid) {
  // Look without collecting first: while the leader is a zombie its group id cannot be
  // reused, so killing what the job left behind in the group cannot hit a stranger.
  siginfo_t info{};
  int r;
  do {
    r = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
  } while (r < 0 && errno == EINTR);
  if (r < 0) return {false, std::nullopt};  // ECHILD: not ours any more
  if (info.si_pid == 0) return {};          // still running
  SignalGroup(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status)) return {false, WEXITSTATUS(status)};
  if (WIFSIGNALED(status)) return {false, -WTERMSIG(status)};
  return {false, std::nullopt};
}

std::vector<std::string> MergeEnvironment(const std::vector<std::string>& base,
                                          const std::vector<std::string>& drop,
                                          const std::map<std::string, std::string>& job_env,
                                          const std::map<std::string, std::string>& frugal_env) {
  std::map<std::string, std::string> merged;
  for (const auto& entry : base) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    merged[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  for (const auto& name : drop) merged.erase(name);
  for (const auto& [k, v] : job_env) merged[k] = v;
  for (const auto& [k, v] : frugal_env) merged[k] = v;
  std::vector<std::string> out;
  for (const auto& [k, v] : merged) out.push_back(k + "=" + v);
  return out;
}

std::vector<std::string> CurrentEnvironment() {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) out.emplace_back(*e);
  return out;
}

StatusOr<OutputChunk> ReadOutput(const std::string& path, std::int64_t offset, size_t max_bytes) {
  OutputChunk chunk{"", offset};
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return chunk;
    return Internal("cannot open " + path + ": " + strerror(errno));
  }
  std::string raw(max_bytes, '\0');
  ssize_t n;
  do {
    n = pread(fd, raw.data(), max_bytes, static_cast<off_t>(offset));
  } while (n < 0 && errno == EINTR);
  const int read_errno = errno;
  close(fd);
  if (n < 0) return Internal("cannot read " + path + ": " + strerror(read_errno));
  raw.resize(static_cast<size_t>(n));
  return DecodeOutput(raw, offset, max_bytes);
}

OutputChunk DecodeOutput(std::string_view raw, std::int64_t offset, size_t max_bytes) {
  OutputChunk chunk{"", offset};
  raw = raw.substr(0, max_bytes);
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  static const std::string kReplacement = "\xEF\xBF\xBD";  // U+FFFD
  size_t i = 0;
  while (i < raw.size()) {
    const int len = SequenceLength(bytes + i, raw.size() - i);
    if (len < 0) break;  // the rest of this character comes with the next read
    // Bytes that are not text, and NUL (PostgreSQL text cannot hold it), become U+FFFD.
    const bool replace = len == 0 || bytes[i] == 0;
    const size_t out_len = replace ? kReplacement.size() : static_cast<size_t>(len);
    if (chunk.data.size() + out_len > max_bytes) break;  // the limit is on what is sent
    if (replace) {
      chunk.data += kReplacement;
      ++i;
    } else {
      chunk.data.append(raw.data() + i, static_cast<size_t>(len));
      i += static_cast<size_t>(len);
    }
  }
  chunk.next_offset = offset + static_cast<std::int64_t>(i);
  return chunk;
}

void AppendOutputLine(const std::string& path, const std::string& line) {
  std::ofstream out(path, std::ios::app);
  out << line << '\n';
}

// --- the no-op runner ---

StatusOr<pid_t> NoopProcessRunner::Start(const SpawnSpec& spec) {
  if (spec.argv.empty()) return InvalidArgument("empty command");
  if (on_exit_) on_exit_();  // it has "exited" already: the caller may reap it at once
  // Above any pid_max (2^22), so no signal or /proc lookup can reach a real process.
  return static_cast<pid_t>((1 << 30) + (next_++ % (1 << 29)));
}

void NoopProcessRunner::SignalGroup(pid_t, int) {}

ReapResult NoopProcessRunner::Reap(pid_t) { return {false, 0}; }

}  // namespace frugal::worker
