// `frugal admin quota set|get TEAM`: concurrent GPUs a team may hold, per capacity kind and
// per pool. Setting replaces the team's whole quota; limits left out mean no limit.
#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <vector>

#include "cli/command_table.h"
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

class QuotaSet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override;

 private:
  Status Run(Session& s) const;

  std::string team_;
  std::optional<int> reserved_, on_demand_, spot_;
  std::vector<std::string> pools_;  // NAME=N
};

void QuotaSet::Register(CLI::App& parent, Registrar& registrar) {
  CLI::App* set = parent.add_subcommand("set", "Replace a team's quota");
  set->add_option("TEAM", team_, "Team name")->required();
  set->add_option("--reserved-gpus", reserved_, "Most reserved GPUs at once")
      ->check(CLI::Range(0, 1000000));
  set->add_option("--on-demand-gpus", on_demand_, "Most on-demand GPUs at once")
      ->check(CLI::Range(0, 1000000));
  set->add_option("--spot-gpus", spot_, "Most spot GPUs at once")->check(CLI::Range(0, 1000000));
  set->add_option("--pool", pools_, "Most GPUs of one pool: NAME=N (repeatable)")
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
  registrar.OnParsed(*set, [this](Session& s) { return Run(s); });
}

Status QuotaSet::Run(Session& s) const {
  json body = {{"pools", json::object()}};
  if (reserved_) body["reserved_gpus"] = *reserved_;
  if (on_demand_) body["on_demand_gpus"] = *on_demand_;
  if (spot_) body["spot_gpus"] = *spot_;
  for (const auto& p : pools_) {
    const auto eq = p.find('=');
    body["pools"][p.substr(0, eq)] = std::stoi(p.substr(eq + 1));
  }
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/teams/" + team_ + "/quota", body));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  PrintQuota(s, r.body);
  return Status::Ok();
}

class QuotaGet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* get = parent.add_subcommand("get", "Show a team's quota");
    get->add_option("TEAM", team_, "Team name")->required();
    registrar.OnParsed(*get, [this](Session& s) -> Status {
      ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/teams/" + team_ + "/quota"));
      RETURN_IF_ERROR(api::ResponseStatus(r));
      PrintQuota(s, r.body);
      return Status::Ok();
    });
  }

 private:
  std::string team_;
};

}  // namespace

std::unique_ptr<Command> NewQuotaSet() { return std::make_unique<QuotaSet>(); }
std::unique_ptr<Command> NewQuotaGet() { return std::make_unique<QuotaGet>(); }

}  // namespace frugal::cli
