// A real frugal-scheduler process for end-to-end tests: its own state directory (and so its
// own embedded PostgreSQL) unless given a database_url, a free port, an admin token from
// `frugal-scheduler bootstrap`, and a small HTTP helper.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>

#include "tests/testing/process.h"
#include "tests/testing/temp_dir.h"

namespace frugal::testing {

struct HttpResult {
  int status = 0;  // 0: no HTTP response at all
  nlohmann::json body;  // null if the body was not JSON
  std::string raw;
  std::multimap<std::string, std::string> headers;
};

class SchedulerProcess {
 public:
  struct Options {
    std::string database_url;  // empty: embedded PostgreSQL under the temp state dir
    EnvOverrides env;
    std::string log_level = "info";
    std::string listen = "127.0.0.1:0";  // fixed address: restarts keep the same URL
    std::string state_dir;               // empty: a fresh one in the temp dir
    std::vector<std::string> extra_args;  // e.g. {"--lease-ttl", "3s"}
    bool bootstrap = true;                // false when restarting on an existing state dir
  };
  SchedulerProcess();
  explicit SchedulerProcess(Options options);
  ~SchedulerProcess();  // SIGTERM, then SIGKILL if it does not stop

  const std::string& url() const { return url_; }
  const std::string& home() const { return dir_->path(); }
  ChildProcess& process() { return *child_; }
  const std::string& admin_token() const { return admin_token_; }

  // Raw HTTP. `token` empty sends no Authorization header.
  HttpResult Call(const std::string& method, const std::string& path, const std::string& token,
                  const std::string& body = "",
                  const std::map<std::string, std::string>& headers = {}) const;

  // Creates the team if needed and returns a fresh token for (team, user, role).
  std::string NewToken(const std::string& team, const std::string& user,
                       const std::string& role = "researcher");

  // SIGTERM and wait; returns the exit code (or -signal).
  int Stop();
  // SIGKILL: no cleanup at all (the embedded PostgreSQL keeps running).
  void Kill();
  const std::string& state_dir() const { return state_dir_; }
  // Environment for running the CLI against this scheduler with `token`.
  EnvOverrides CliEnv(const std::string& token) const;
  // GET /v1/jobs/{id} as `token`: the job's detail (an error body if it failed).
  nlohmann::json Job(std::int64_t id, const std::string& token) const;
  // Every chunk of the job's output (GET /v1/jobs/{id}/logs), joined.
  std::string JobLogs(std::int64_t id, const std::string& token) const;

 private:
  Options options_;
  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<ChildProcess> child_;
  std::string url_;
  std::string admin_token_;
  std::string state_dir_;
};

// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
int FreePort();

}  // namespace frugal::testing
