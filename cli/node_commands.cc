// `frugal admin node list|drain|undrain|remove` (decision 0021): the nodes of the cluster
// as GET /v1/admin/nodes shows them, and the admin changes to one node.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <ostream>
#include <utility>

#include "cli/command_table.h"
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

class NodeList final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* list =
        parent.add_subcommand("list", "List nodes: GPUs, state, lease, work, utilisation");
    registrar.OnParsed(*list, [](Session& s) { return RunNodeList(s); });
  }
};

// `admin node drain|undrain|remove NODE`: one POST each, named by `verb`.
class NodeChange final : public Command {
 public:
  NodeChange(std::string verb, std::string help) : verb_(std::move(verb)), help_(std::move(help)) {}

  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* sub = parent.add_subcommand(verb_, help_);
    sub->add_option("NODE", node_, "Node name (frugal admin node list)")->required();
    registrar.OnParsed(*sub, [this](Session& s) { return RunNodeChange(s, verb_, node_); });
  }

 private:
  const std::string verb_, help_;
  std::string node_;
};

}  // namespace

std::unique_ptr<Command> NewNodeList() { return std::make_unique<NodeList>(); }
std::unique_ptr<Command> NewNodeDrain() {
  return std::make_unique<NodeChange>("drain",
                                      "Place no new work on NODE; running attempts continue");
}
std::unique_ptr<Command> NewNodeUndrain() {
  return std::make_unique<NodeChange>("undrain", "Let NODE take work again after an admin drain");
}
std::unique_ptr<Command> NewNodeRemove() {
  return std::make_unique<NodeChange>(
      "remove", "Forget NODE: allowed once drained and empty, or when its lease is lost");
}

}  // namespace frugal::cli
