#include "config/local_workers.h"

#include <yaml-cpp/yaml.h>

#include <set>

namespace frugal::config {

namespace {

Status Bad(size_t i, const std::string& key, const std::string& what) {
  return InvalidArgument(
      "local_workers[" + std::to_string(i) + "]." + key + ": " + what, "local_workers");
}

template <typename T>
Status Read(const YAML::Node& v, size_t i, const std::string& key, T& out) {
  try {
    out = v.as<T>();
    return Status::Ok();
  } catch (const YAML::Exception&) {
    return Bad(i, key, "has the wrong type");
  }
}

Status ReadDuration(const YAML::Node& v, size_t i, const std::string& key, Seconds& out) {
  if (!v.IsScalar()) return Bad(i, key, "must be a duration like 5s");
  auto d = ParseDuration(v.as<std::string>(), true);
  if (!d.ok()) return Bad(i, key, d.status().message());
  out = *d;
  return Status::Ok();
}

Status ParsePreemption(const YAML::Node& p, size_t i, PreemptionSpec& out) {
  if (!p.IsMap()) return Bad(i, "preemption", "must be a mapping (rate_per_node_hour or trace)");
  for (const auto& kv : p) {
    const auto key = kv.first.as<std::string>();
    const auto full = "preemption." + key;
    if (key == "rate_per_node_hour") {
      RETURN_IF_ERROR(Read(kv.second, i, full, out.rate_per_node_hour));
      if (out.rate_per_node_hour <= 0) return Bad(i, full, "must be > 0");
      out.kind = PreemptionSpec::Kind::kRate;
    } else if (key == "trace") {
      RETURN_IF_ERROR(Read(kv.second, i, full, out.trace));
      out.kind = PreemptionSpec::Kind::kTrace;
    } else if (key == "zone") {
      RETURN_IF_ERROR(Read(kv.second, i, full, out.zone));
    } else if (key == "speedup") {
      RETURN_IF_ERROR(Read(kv.second, i, full, out.speedup));
      if (out.speedup <= 0) return Bad(i, full, "must be > 0");
    } else if (key == "start_s") {
      RETURN_IF_ERROR(Read(kv.second, i, full, out.start_s));
      if (out.start_s < 0) return Bad(i, full, "must be >= 0");
    } else if (key == "seed") {
      RETURN_IF_ERROR(Read(kv.second, i, full, out.seed));
    } else {
      return Bad(i, full, "unknown key (rate_per_node_hour, seed, trace, zone, speedup, start_s)");
    }
  }
  if (!out.trace.empty() && out.rate_per_node_hour > 0)
    return Bad(i, "preemption", "give either rate_per_node_hour or trace, not both");
  if (out.kind == PreemptionSpec::Kind::kTrace && out.zone.empty())
    return Bad(i, "preemption.zone", "is required with a trace (the series to replay)");
  return Status::Ok();
}

}  // namespace

StatusOr<std::vector<LocalWorkerSpec>> ParseLocalWorkers(const YAML::Node& node) {
  if (!node.IsSequence())
    return InvalidArgument("local_workers must be a list of {pool, nodes, gpus_per_node, ...}",
                           "local_workers");
  std::vector<LocalWorkerSpec> out;
  std::set<std::string> pools;
  for (size_t i = 0; i < node.size(); ++i) {
    const YAML::Node& e = node[i];
    if (!e.IsMap()) return Bad(i, "", "must be a mapping");
    LocalWorkerSpec s;
    for (const auto& kv : e) {
      const auto key = kv.first.as<std::string>();
      if (key == "pool") {
        RETURN_IF_ERROR(Read(kv.second, i, key, s.pool));
      } else if (key == "nodes") {
        RETURN_IF_ERROR(Read(kv.second, i, key, s.nodes));
        if (s.nodes < 0 || s.nodes > 64) return Bad(i, key, "must be in [0, 64]");
      } else if (key == "max_nodes") {
        RETURN_IF_ERROR(Read(kv.second, i, key, s.max_nodes));
        if (s.max_nodes < 1 || s.max_nodes > 64) return Bad(i, key, "must be in [1, 64]");
      } else if (key == "gpus_per_node") {
        RETURN_IF_ERROR(Read(kv.second, i, key, s.gpus_per_node));
        if (s.gpus_per_node < 1 || s.gpus_per_node > 64) return Bad(i, key, "must be in [1, 64]");
      } else if (key == "gpu_type") {
        RETURN_IF_ERROR(Read(kv.second, i, key, s.gpu_type));
      } else if (key == "gpu_mem_gb") {
        RETURN_IF_ERROR(Read(kv.second, i, key, s.gpu_mem_gb));
        if (s.gpu_mem_gb < 1) return Bad(i, key, "must be >= 1");
      } else if (key == "grace") {
        RETURN_IF_ERROR(ReadDuration(kv.second, i, key, s.grace));
      } else if (key == "restart_delay") {
        RETURN_IF_ERROR(ReadDuration(kv.second, i, key, s.restart_delay));
      } else if (key == "preemption") {
        RETURN_IF_ERROR(ParsePreemption(kv.second, i, s.preemption));
      } else {
        return Bad(i, key,
                   "unknown key (pool, nodes, max_nodes, gpus_per_node, gpu_type, gpu_mem_gb, "
                   "grace, restart_delay, preemption)");
      }
    }
    if (s.pool.empty()) return Bad(i, "pool", "is required");
    if (s.max_nodes < 0) s.max_nodes = s.nodes;
    if (s.max_nodes < s.nodes) return Bad(i, "max_nodes", "must be at least nodes");
    if (s.max_nodes == 0) return Bad(i, "nodes", "must be >= 1 unless max_nodes is set");
    if (!pools.insert(s.pool).second) return Bad(i, "pool", "'" + s.pool + "' is listed twice");
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace frugal::config
