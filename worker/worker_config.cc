#include "worker/worker_config.h"

#include <unistd.h>

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>

#include "config/yaml_settings.h"
#include "protocol/worker_protocol.h"

namespace frugal::worker {

namespace fs = std::filesystem;

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* v = std::getenv(name.c_str());
  if (v == nullptr) return std::nullopt;
  return std::string(v);
}

namespace {

StatusOr<int> ParseInt(const std::string& key, const std::string& v, int lo, int hi) {
  try {
    size_t used = 0;
    const long n = std::stol(v, &used);
    if (used == v.size() && n >= lo && n <= hi) return static_cast<int>(n);
  } catch (...) {
  }
  return InvalidArgument(key + " must be an integer in [" + std::to_string(lo) + ", " +
                             std::to_string(hi) + "], got '" + v + "'",
                         key);
}

StatusOr<Seconds> ParseSeconds(const std::string& key, const std::string& v) {
  auto d = ParseDuration(v);
  if (!d.ok()) return InvalidArgument(key + ": " + d.status().message(), key);
  return *d;
}

std::string KeyList() {
  std::string out;
  for (const auto& k : WorkerConfigKeys()) out += (out.empty() ? "" : ", ") + k;
  return out;
}

Status Required(const std::string& value, const std::string& key, const std::string& how) {
  if (!value.empty()) return Status::Ok();
  return InvalidArgument(key + " is required (" + how + ")", key);
}

Status ApplyDetectedGpus(WorkerConfig& c, const std::vector<GpuReading>& detected) {
  if (!detected.empty()) {
    if (c.gpus == 0) c.gpus = static_cast<int>(detected.size());
    if (c.gpu_type.empty()) c.gpu_type = ShortGpuType(detected.front().name);
    // MiB to GB, rounded: an "80GB" board reports 81920 MiB (or a little less).
    if (c.gpu_mem_gb == 0) c.gpu_mem_gb = (detected.front().memory_total_mb + 512) / 1024;
  }
  const std::string how = detected.empty() ? "nvidia-smi was not found; set it" : "set it";
  if (c.gpus < 1) return InvalidArgument("gpus is required (" + how + ")", "gpus");
  if (c.gpu_mem_gb < 1)
    return InvalidArgument("gpu_mem_gb is required (" + how + ")", "gpu_mem_gb");
  return Required(c.gpu_type, "gpu_type", how);
}

}  // namespace

const std::vector<std::string>& WorkerConfigKeys() {
  static const std::vector<std::string> keys = {
      "scheduler_url",      "token",      "pool",            "node",
      "advertise_address",  "gpus",       "gpu_type",        "gpu_mem_gb",
      "heartbeat_interval", "work_dir",   "checkpoint_root", "grace_period",
      "notice_file",        "notice_url", "notice_format",   "log_level",
      "nvidia_smi",         "job_user",   "job_uids",        "pass_env"};
  return keys;
}

Status SetKey(WorkerConfig& c, const std::string& key, const std::string& v) {
  if (key == "scheduler_url") {
    c.scheduler_url = v;
  } else if (key == "token") {
    c.token = v;
  } else if (key == "pool") {
    c.pool = v;
  } else if (key == "node") {
    c.node = v;
  } else if (key == "advertise_address") {
    // Checked here rather than by registration's 400, so a typo stops the worker at once.
    RETURN_IF_ERROR(protocol::CheckAddress(v, key));
    c.advertise_address = v;
  } else if (key == "gpus") {
    ASSIGN_OR_RETURN(c.gpus, ParseInt(key, v, 0, 1024));
  } else if (key == "gpu_type") {
    c.gpu_type = v;
  } else if (key == "gpu_mem_gb") {
    ASSIGN_OR_RETURN(c.gpu_mem_gb, ParseInt(key, v, 0, 4096));
  } else if (key == "heartbeat_interval") {
    ASSIGN_OR_RETURN(c.heartbeat_interval, ParseSeconds(key, v));
  } else if (key == "work_dir") {
    c.work_dir = v;
  } else if (key == "checkpoint_root") {
    c.checkpoint_root = v;
  } else if (key == "grace_period") {
    ASSIGN_OR_RETURN(c.grace_period, ParseSeconds(key, v));
  } else if (key == "notice_file") {
    c.notice_file = v;
  } else if (key == "notice_url") {
    c.notice_url = v;
  } else if (key == "notice_format") {
    if (v != "aws" && v != "gcp") {
      return InvalidArgument("notice_format must be aws or gcp, got '" + v + "'", key);
    }
    c.notice_format = v;
  } else if (key == "log_level") {
    c.log_level = v;
  } else if (key == "nvidia_smi") {
    if (v.empty()) return InvalidArgument("nvidia_smi must name a program or a path", key);
    c.nvidia_smi = v;
  } else if (key == "job_user") {
    c.job_user = v;
  } else if (key == "job_uids") {
    c.job_uids = v;
  } else if (key == "pass_env") {
    c.pass_env.clear();
    size_t start = 0;
    while (start <= v.size()) {
      size_t comma = v.find(',', start);
      if (comma == std::string::npos) comma = v.size();
      std::string name = v.substr(start, comma - start);
      if (!name.empty()) {
        if (name.find('=') != std::string::npos) {
          return InvalidArgument("pass_env names variables, comma-separated (PATH,LANG)", key);
        }
        c.pass_env.push_back(name);
      }
      start = comma + 1;
    }
  } else {
    return InvalidArgument("unknown configuration key '" + key + "' (" + KeyList() + ")", key);
  }
  return Status::Ok();
}

StatusOr<WorkerConfig> LoadWorkerConfig(const std::string& yaml_path, const EnvLookup& env) {
  WorkerConfig c;
  RETURN_IF_ERROR(config::ReadYamlSettings(
      yaml_path, [&](const std::string& key, const YAML::Node& value) -> Status {
        ASSIGN_OR_RETURN(std::string text, config::ScalarText(key, value));
        return SetKey(c, key, text);
      }));
  if (auto token = env("FRUGAL_WORKER_TOKEN"); token && !token->empty()) c.token = *token;
  return c;
}

Status CompleteWorkerConfig(WorkerConfig& c, const std::string& hostname,
                            const std::vector<GpuReading>& detected) {
  RETURN_IF_ERROR(Required(c.scheduler_url, "scheduler_url", "--url"));
  RETURN_IF_ERROR(Required(c.token, "token", "set FRUGAL_WORKER_TOKEN"));
  RETURN_IF_ERROR(Required(c.pool, "pool", "--pool"));
  if (c.node.empty()) c.node = hostname;
  RETURN_IF_ERROR(Required(c.node, "node", "the host name is unknown; use --node"));
  // A set advertise_address was checked by SetKey; the host name is checked the same way.
  if (c.advertise_address.empty() && !hostname.empty()) {
    if (!protocol::CheckAddress(hostname, "advertise_address").ok()) {
      return InvalidArgument("the host name is no address other nodes could dial; use "
                             "--advertise-address",
                             "advertise_address");
    }
    c.advertise_address = hostname;
  }
  RETURN_IF_ERROR(ApplyDetectedGpus(c, detected));
  if (c.work_dir.empty()) c.work_dir = ".frugal-worker/" + c.node;
  // Shared by every worker on this machine by default, so a local demo can resume a job
  // on another node; real clusters point it at shared storage.
  if (c.checkpoint_root.empty()) c.checkpoint_root = ".frugal-worker/checkpoints";
  // Jobs run in their own directories: every path they are given must be absolute.
  std::error_code ec;
  for (std::string* path : {&c.work_dir, &c.checkpoint_root, &c.notice_file}) {
    if (path->empty()) continue;
    const fs::path absolute = fs::absolute(*path, ec);
    if (ec) return InvalidArgument("cannot resolve path '" + *path + "': " + ec.message());
    *path = absolute.lexically_normal().string();
    while (path->size() > 1 && path->back() == '/') path->pop_back();
  }
  if (geteuid() == 0) {
    if (c.job_user.empty()) c.job_user = kDefaultJobUser;
    if (!c.job_uids) c.job_uids = kDefaultJobUids;
    if (*c.job_uids == "none") c.job_uids = "";
  } else if (!c.job_user.empty() || (c.job_uids && !c.job_uids->empty() && *c.job_uids != "none")) {
    return InvalidArgument("job_user and job_uids need a worker running as root; without root "
                           "jobs run as the worker's own user",
                           c.job_user.empty() ? "job_uids" : "job_user");
  }
  return Status::Ok();
}

}  // namespace frugal::worker
