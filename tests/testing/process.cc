#include "tests/testing/process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace frugal::testing {

namespace {

std::vector<std::string> BuildEnv(const EnvOverrides& overrides) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : overrides) {
    if (v.empty()) {
      env.erase(k);
    } else {
      env[k] = v;
    }
  }
  std::vector<std::string> out;
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

pid_t Spawn(const std::vector<std::string>& argv, const EnvOverrides& env,
            const std::string& out_path, const std::string& err_path) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  auto env_strings = BuildEnv(env);
  std::vector<char*> envp;
  for (auto& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  pid_t pid;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw std::runtime_error("cannot start " + argv[0]);
  return pid;
}

std::atomic<int> g_counter{0};

}  // namespace

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChildProcess::ChildProcess(const std::vector<std::string>& argv, const EnvOverrides& env,
                           const std::string& log_prefix)
    : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
  pid_ = Spawn(argv, env, out_path_, err_path_);
}

ChildProcess::~ChildProcess() {
  if (!exit_ && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

std::optional<std::string> ChildProcess::WaitForOutput(const std::string& needle,
                                                       std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    std::string out = Stdout();
    auto pos = out.find(needle);
    if (pos != std::string::npos) {
      auto start = out.rfind('\n', pos);
      start = start == std::string::npos ? 0 : start + 1;
      auto end = out.find('\n', pos);
      return out.substr(start, end == std::string::npos ? std::string::npos : end - start);
    }
    if (Wait(std::chrono::milliseconds(0))) return std::nullopt;  // exited
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::nullopt;
}

void ChildProcess::Signal(int sig) {
  if (!exit_) kill(pid_, sig);
}

std::optional<int> ChildProcess::Wait(std::chrono::milliseconds timeout) {
  if (exit_) return exit_;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_ = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
      return exit_;
    }
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::string ChildProcess::Stdout() const { return ReadFile(out_path_); }
std::string ChildProcess::Stderr() const { return ReadFile(err_path_); }

CommandResult RunCommand(const std::vector<std::string>& argv, const EnvOverrides& env,
                         std::chrono::milliseconds timeout) {
  const std::string prefix = "/tmp/frugal-cmd-" + std::to_string(getpid()) + "-" +
                             std::to_string(g_counter++);
  CommandResult result;
  {
    ChildProcess child(argv, env, prefix);
    auto code = child.Wait(timeout);
    result.exit_code = code.value_or(-999);
    result.out = child.Stdout();
    result.err = child.Stderr();
  }
  unlink((prefix + ".out").c_str());
  unlink((prefix + ".err").c_str());
  return result;
}

}  // namespace frugal::testing
