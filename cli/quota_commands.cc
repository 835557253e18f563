// `frugal admin quota set|get TEAM`: concurrent GPUs a team may hold, per capacity kind and
// per pool. Setting replaces the team's whole quota; limits left out mean no limit.
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/commands.h"
#include "cli/format.h"

namespace frugal::cli {

using nlohmann::json;

namespace {

void PrintQuota(Session& s, const json& q) {
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(q);
    return;
  }
  Table t({"TEAM", "LIMIT", "GPUS"});
  for (const char* kind : {"reserved_gpus", "on_demand_gpus", "spot_gpus"}) {
    if (!Field(q, kind).is_null()) t.AddRow({Text(q, "team"), kind, Text(q, kind)});
  }
  for (const auto& [pool, max] : Field(q, "pools").items())
    t.AddRow({Text(q, "team"), "pool " + pool, max.dump()});
  if (t.empty()) {
    s.out << "Team " << Text(q, "team") << " has no quota.\n";
  } else {
    s.out << t.Render();
  }
}

}  // namespace

void Commands::AddQuota(CLI::App& admin) {
  CLI::App* quota = admin.add_subcommand("quota", "Team quotas: GPUs a team may hold at once");
  quota->require_subcommand(1);
  CLI::App* set = quota->add_subcommand("set", "Replace a team's quota");
  set->add_option("TEAM", quota_.team, "Team name")->required();
  set->add_option("--reserved-gpus", quota_.reserved, "Most reserved GPUs at once")
      ->check(CLI::Range(0, 1000000));
  set->add_option("--on-demand-gpus", quota_.on_demand, "Most on-demand GPUs at once")
      ->check(CLI::Range(0, 1000000));
  set->add_option("--spot-gpus", quota_.spot, "Most spot GPUs at once")
      ->check(CLI::Range(0, 1000000));
  set->add_option("--pool", quota_.pools, "Most GPUs of one pool: NAME=N (repeatable)")
      ->allow_extra_args(false)
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            const auto eq = v.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == v.size() ||
                v.find_first_not_of("0123456789", eq + 1) != std::string::npos)
              return "expected NAME=N, got '" + v + "'";
            return "";
          },
          "NAME=N"));
  OnParsed(*set, [this](Session& s) -> Status {
    json body = {{"pools", json::object()}};
    if (quota_.reserved) body["reserved_gpus"] = *quota_.reserved;
    if (quota_.on_demand) body["on_demand_gpus"] = *quota_.on_demand;
    if (quota_.spot) body["spot_gpus"] = *quota_.spot;
    for (const auto& p : quota_.pools) {
      const auto eq = p.find('=');
      body["pools"][p.substr(0, eq)] = std::stoi(p.substr(eq + 1));
    }
    ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/teams/" + quota_.team + "/quota", body));
    RETURN_IF_ERROR(api::ResponseStatus(r));
    PrintQuota(s, r.body);
    return Status::Ok();
  });
  CLI::App* get = quota->add_subcommand("get", "Show a team's quota");
  get->add_option("TEAM", quota_.team, "Team name")->required();
  OnParsed(*get, [this](Session& s) -> Status {
    ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/teams/" + quota_.team + "/quota"));
    RETURN_IF_ERROR(api::ResponseStatus(r));
    PrintQuota(s, r.body);
    return Status::Ok();
  });
}

}  // namespace frugal::cli
