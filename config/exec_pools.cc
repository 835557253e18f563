#include "config/exec_pools.h"

#include <yaml-cpp/yaml.h>

#include <set>

namespace frugal::config {

namespace {

Status Bad(size_t i, const std::string& key, const std::string& what) {
  return InvalidArgument("exec_pools[" + std::to_string(i) + "]." + key + ": " + what,
                         "exec_pools");
}

template <typename T>
Status Read(const YAML::Node& v, size_t i, const std::string& key, T& out) {
  try {
    if (!v.IsScalar()) return Bad(i, key, "must be a single value");
    out = v.as<T>();
    return Status::Ok();
  } catch (const YAML::Exception&) {
    return Bad(i, key, "has the wrong type");
  }
}

Status ReadDuration(const YAML::Node& v, size_t i, const std::string& key, Seconds& out) {
  if (!v.IsScalar()) return Bad(i, key, "must be a duration like 30s");
  auto d = ParseDuration(v.as<std::string>());
  if (!d.ok()) return Bad(i, key, d.status().message());
  out = *d;
  return Status::Ok();
}

Status ReadInt(const YAML::Node& v, size_t i, const std::string& key, int lo, int hi, int& out) {
  RETURN_IF_ERROR(Read(v, i, key, out));
  if (out < lo || out > hi)
    return Bad(i, key, "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return Status::Ok();
}

Status ReadCommand(const YAML::Node& v, size_t i, const std::string& key,
                   std::vector<std::string>& out) {
  out.clear();
  if (v.IsSequence()) {
    for (const auto& a : v) {
      std::string arg;
      RETURN_IF_ERROR(Read(a, i, key, arg));
      out.push_back(arg);
    }
  } else {
    std::string text;
    RETURN_IF_ERROR(Read(v, i, key, text));
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find(' ', pos);
      if (end == std::string::npos) end = text.size();
      if (end > pos) out.push_back(text.substr(pos, end - pos));
      pos = end + 1;
    }
  }
  if (out.empty() || out[0].empty()) return Bad(i, key, "is required (a path to an executable)");
  return Status::Ok();
}

Status ReadEnv(const YAML::Node& v, size_t i, std::map<std::string, std::string>& out) {
  if (!v.IsMap()) return Bad(i, "env", "must be a mapping of NAME: value");
  for (const auto& kv : v) {
    std::string name;
    RETURN_IF_ERROR(Read(kv.first, i, "env", name));
    bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
    for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
    if (!ok) return Bad(i, "env." + name, "is not a variable name ([A-Za-z_][A-Za-z0-9_]*)");
    // The provider sets these itself; a pool's env must not forge them.
    if (name.rfind("FRUGAL_", 0) == 0) return Bad(i, "env." + name, "FRUGAL_* is reserved");
    RETURN_IF_ERROR(Read(kv.second, i, "env." + name, out[name]));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<ExecPoolSpec>> ParseExecPools(const YAML::Node& node) {
  if (!node.IsSequence())
    return InvalidArgument("exec_pools must be a list of {pool, node_gpus, max_nodes, create, "
                           "destroy, list, ...}",
                           "exec_pools");
  std::vector<ExecPoolSpec> out;
  std::set<std::string> pools;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& e = node[i];
    if (!e.IsMap()) return Bad(i, "", "must be a mapping");
    ExecPoolSpec s;
    for (const auto& kv : e) {
      const auto key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "pool") {
        RETURN_IF_ERROR(Read(v, i, key, s.pool));
      } else if (key == "node_gpus") {
        RETURN_IF_ERROR(ReadInt(v, i, key, 1, 64, s.node_gpus));
      } else if (key == "max_nodes") {
        RETURN_IF_ERROR(ReadInt(v, i, key, 1, 10000, s.max_nodes));
      } else if (key == "max_concurrent_creates") {
        RETURN_IF_ERROR(ReadInt(v, i, key, 1, 256, s.max_concurrent_creates));
      } else if (key == "create") {
        RETURN_IF_ERROR(ReadCommand(v, i, key, s.create));
      } else if (key == "destroy") {
        RETURN_IF_ERROR(ReadCommand(v, i, key, s.destroy));
      } else if (key == "list") {
        RETURN_IF_ERROR(ReadCommand(v, i, key, s.list));
      } else if (key == "worker_url") {
        RETURN_IF_ERROR(Read(v, i, key, s.worker_url));
      } else if (key == "checkpoint_root") {
        RETURN_IF_ERROR(Read(v, i, key, s.checkpoint_root));
      } else if (key == "env") {
        RETURN_IF_ERROR(ReadEnv(v, i, s.env));
      } else if (key == "command_timeout") {
        RETURN_IF_ERROR(ReadDuration(v, i, key, s.command_timeout));
      } else if (key == "boot_timeout") {
        RETURN_IF_ERROR(ReadDuration(v, i, key, s.boot_timeout));
      } else if (key == "leak_grace") {
        RETURN_IF_ERROR(ReadDuration(v, i, key, s.leak_grace));
      } else if (key == "stockout_backoff") {
        RETURN_IF_ERROR(ReadDuration(v, i, key, s.stockout_backoff));
      } else if (key == "list_interval") {
        RETURN_IF_ERROR(ReadDuration(v, i, key, s.list_interval));
      } else {
        return Bad(i, key,
                   "unknown key (pool, node_gpus, max_nodes, create, destroy, list, worker_url, "
                   "checkpoint_root, env, command_timeout, boot_timeout, leak_grace, stockout_backoff, "
                   "list_interval, max_concurrent_creates)");
      }
    }
    if (s.pool.empty()) return Bad(i, "pool", "is required");
    for (const auto* cmd : {&s.create, &s.destroy, &s.list}) {
      if (cmd->empty())
        return Bad(i, cmd == &s.create ? "create" : cmd == &s.destroy ? "destroy" : "list",
                   "is required (a path to an executable)");
    }
    if (!pools.insert(s.pool).second) return Bad(i, "pool", "'" + s.pool + "' is listed twice");
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace frugal::config
