// `frugal admin node list|drain|undrain|remove` (decision 0021): the nodes of the cluster
// as GET /v1/admin/nodes shows them, and the admin changes to one node.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <ostream>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/yaml_json.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

// "draining (admin)", "ready", "lost".
std::string StateText(const json& n) {
  const std::string drain = Text(n, "drain");
  return drain.empty() ? Text(n, "state") : Text(n, "state") + " (" + drain + ")";
}

// "4 x a100 80 GB"
std::string GpuText(const json& n) {
  return Text(n, "gpus") + " x " + Text(n, "gpu_type") + " " + Text(n, "gpu_mem_gb") + " GB";
}

// Seconds as "45s", "3m", "2h5m", "4d3h"; null as "-".
std::string Age(const json& n, const char* key) {
  const json& v = Field(n, key);
  if (!v.is_number_integer()) return "-";
  long long s = v.get<long long>();
  if (s < 0) s = 0;
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%llds", s);
  } else if (s < 3600) {
    std::snprintf(buf, sizeof buf, "%lldm", s / 60);
  } else if (s < 86400) {
    std::snprintf(buf, sizeof buf, "%lldh%lldm", s / 3600, s % 3600 / 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lldd%lldh", s / 86400, s % 86400 / 3600);
  }
  return buf;
}

std::string NodeTable(const json& nodes) {
  Table t({"NAME", "POOL", "GPUS", "STATE", "LEASE AGE", "RUNNING", "GPU UTIL", "CREDENTIAL AGE"});
  for (const auto& n : nodes) {
    const json& util = Field(n, "gpu_utilization");
    char pct[16] = "-";
    if (util.is_number()) std::snprintf(pct, sizeof pct, "%.0f%%", util.get<double>());
    t.AddRow({Text(n, "name"), Text(n, "pool"), GpuText(n), StateText(n),
              Age(n, "lease_age_seconds"), Text(n, "running_attempts"), pct,
              Age(n, "credential_age_seconds")});
  }
  return t.empty() ? "No nodes.\n" : t.Render();
}

void Show(Session& s, const json& body, const std::string& table) {
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(body);
  } else if (s.output == OutputFormat::kYaml) {
    s.out << JsonToYaml(body);
  } else {
    s.out << table;
  }
}

Status RunNodeList(Session& s) {
  ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/nodes"));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  Show(s, r.body, NodeTable(Field(r.body, "nodes")));
  return Status::Ok();
}

Status RunNodeChange(Session& s, const std::string& verb, const std::string& name) {
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/nodes/" + api::UrlEncode(name) + "/" + verb));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  std::string text;
  if (verb == "remove") {
    text = "Removed node " + name + ".\n";
  } else {
    text = "Node " + name + ": " + StateText(r.body) + ", " + Text(r.body, "running_attempts") +
           " running attempt(s).\n";
  }
  Show(s, r.body, text);
  return Status::Ok();
}

}  // namespace

void Commands::AddNode(CLI::App& admin) {
  CLI::App* node = admin.add_subcommand("node", "List, drain, undrain or remove nodes");
  node->require_subcommand(1);
  CLI::App* list = node->add_subcommand("list", "List nodes: GPUs, state, lease, work, utilisation");
  OnParsed(*list, [](Session& s) { return RunNodeList(s); });
  const struct {
    const char* verb;
    const char* help;
  } changes[] = {
      {"drain", "Place no new work on NODE; running attempts continue"},
      {"undrain", "Let NODE take work again after an admin drain"},
      {"remove", "Forget NODE: allowed once drained and empty, or when its lease is lost"},
  };
  for (const auto& c : changes) {
    CLI::App* sub = node->add_subcommand(c.verb, c.help);
    sub->add_option("NODE", node_name_, "Node name (frugal admin node list)")->required();
    const std::string verb = c.verb;
    OnParsed(*sub, [this, verb](Session& s) { return RunNodeChange(s, verb, node_name_); });
  }
}

}  // namespace frugal::cli
