#include "tests/testing/scheduler_fixture.h"

#include <httplib.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>

namespace frugal::testing {

SchedulerProcess::SchedulerProcess() : SchedulerProcess(Options{}) {}

SchedulerProcess::SchedulerProcess(Options options)
    : options_(std::move(options)), dir_(std::make_unique<TempDir>("frugal-e2e")) {
  state_dir_ = options_.state_dir.empty() ? dir_->path() + "/state" : options_.state_dir;
  std::vector<std::string> argv = {FRUGAL_SCHEDULER_BIN, "--listen", options_.listen,
                                   "--log-level", options_.log_level, "--state-dir", state_dir_};
  argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
  std::vector<std::string> boot = {FRUGAL_SCHEDULER_BIN, "--state-dir", state_dir_};
  if (!options_.database_url.empty()) {
    argv.insert(argv.end(), {"--database-url", options_.database_url});
    boot.insert(boot.end(), {"--database-url", options_.database_url});
  }
  EnvOverrides env = options_.env;
  env.emplace("FRUGAL_HOME", "");  // the flag decides, not the developer's environment
  env.emplace("FRUGAL_DATABASE_URL", "");
  child_ = std::make_unique<ChildProcess>(argv, env, dir_->path() + "/scheduler");
  auto line = child_->WaitForOutput("listening on http://", std::chrono::seconds(60));
  if (!line) {
    throw std::runtime_error("scheduler did not start:\n" + child_->Stdout() + child_->Stderr());
  }
  url_ = line->substr(line->find("http://"));
  if (!options_.bootstrap) return;
  boot.push_back("bootstrap");
  auto r = RunCommand(boot, env);
  if (r.exit_code != 0) throw std::runtime_error("bootstrap failed: " + r.err);
  admin_token_ = r.out.substr(0, r.out.find('\n'));
}

SchedulerProcess::~SchedulerProcess() {
  if (child_) Stop();
}

void SchedulerProcess::Kill() {
  child_->Signal(SIGKILL);
  child_->Wait(std::chrono::seconds(10));
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

int SchedulerProcess::Stop() {
  child_->Signal(SIGTERM);
  auto code = child_->Wait(std::chrono::seconds(30));
  if (!code) {
    child_->Signal(SIGKILL);
    code = child_->Wait(std::chrono::seconds(10));
  }
  return code.value_or(-999);
}

HttpResult SchedulerProcess::Call(const std::string& method, const std::string& path,
                                  const std::string& token, const std::string& body,
                                  const std::map<std::string, std::string>& headers) const {
  httplib::Client cli(url_);
  cli.set_read_timeout(30, 0);
  httplib::Headers h;
  if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
  for (const auto& [k, v] : headers) h.emplace(k, v);
  httplib::Result res = method == "GET"      ? cli.Get(path, h)
                        : method == "DELETE" ? cli.Delete(path, h, body, "application/json")
                        : method == "PUT"    ? cli.Put(path, h, body, "application/json")
                                             : cli.Post(path, h, body, "application/json");
  HttpResult out;
  if (!res) return out;
  out.status = res->status;
  out.raw = res->body;
  for (const auto& [k, v] : res->headers) out.headers.emplace(k, v);
  out.body = nlohmann::json::parse(res->body, nullptr, false);
  if (out.body.is_discarded()) out.body = nullptr;
  return out;
}

std::string SchedulerProcess::NewToken(const std::string& team, const std::string& user,
                                       const std::string& role) {
  Call("POST", "/v1/admin/teams", admin_token_, nlohmann::json{{"name", team}}.dump());
  auto r = Call("POST", "/v1/admin/tokens", admin_token_,
                nlohmann::json{{"team", team}, {"user", user}, {"role", role}}.dump());
  if (r.status != 201) throw std::runtime_error("token create failed: " + r.raw);
  return r.body["token"].get<std::string>();
}

EnvOverrides SchedulerProcess::CliEnv(const std::string& token) const {
  return {{"FRUGAL_URL", url_}, {"FRUGAL_TOKEN", token}, {"HOME", dir_->path()},
          {"XDG_CONFIG_HOME", dir_->path() + "/xdg"}};
}

nlohmann::json SchedulerProcess::Job(std::int64_t id, const std::string& token) const {
  return Call("GET", "/v1/jobs/" + std::to_string(id), token).body;
}

std::string SchedulerProcess::JobLogs(std::int64_t id, const std::string& token) const {
  std::string out;
  const nlohmann::json r = Call("GET", "/v1/jobs/" + std::to_string(id) + "/logs", token).body;
  if (r.is_object() && r.contains("chunks"))
    for (const auto& c : r["chunks"]) out += c.value("data", "");
  return out;
}

}  // namespace frugal::testing
