#include "worker/process_runner.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
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

// Starts the job under frugal-keeper (keeper_main.cc has its contract): spawned, not
// forked, so the worker's memory is never copied for a job.
StatusOr<pid_t> StartKept(const SpawnSpec& spec, const std::string& keeper) {
  const std::string program = ResolveProgram(spec.argv[0], PathOf(spec.env));
  if (program.empty()) return NotFound("cannot start '" + spec.argv[0] + "': not found in PATH");
  const bool switches = spec.identity.has_value();
  std::vector<std::string> args = {keeper,
                                   std::to_string(getpid()),
                                   switches ? std::to_string(spec.identity->uid) : "-",
                                   switches ? std::to_string(spec.identity->gid) : "-",
                                   switches && spec.identity->own_uid ? "1" : "0",
                                   spec.cwd,
                                   program};
  args.insert(args.end(), spec.argv.begin(), spec.argv.end());
  // Opened here, so a failure to open it is told apart from a missing keeper.
  const int out_fd =
      open(spec.output_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (out_fd < 0) return Internal("cannot open " + spec.output_path + ": " + strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 1);
  posix_spawn_file_actions_adddup2(&actions, out_fd, 2);
  // Only the three: nothing else the worker holds open reaches a job.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);  // the keeper leads the job's group
  DefaultSignals(attr);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  auto argv = CStrings(args);
  auto envp = CStrings(spec.env);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, keeper.c_str(), &actions, &attr, argv.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(out_fd);
  if (rc == ENOENT || rc == EACCES) {
    return FailedPrecondition("cannot start " + keeper + " (" + strerror(rc) +
                              "): frugal-keeper must be installed beside frugal-worker");
  }
  if (rc != 0) return SpawnError(rc, keeper);
  return pid;
}

}  // namespace

std::string KeeperBeside() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  return (ec ? std::filesystem::path(".") : self.parent_path()) / "frugal-keeper";
}

StatusOr<pid_t> PosixProcessRunner::Start(const SpawnSpec& spec) {
  if (spec.argv.empty()) return InvalidArgument("empty command", "command");
  if (spec.keeper || spec.identity) return StartKept(spec, keeper_);
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
