// Who is who: `frugal whoami`, `frugal admin team create|list` and `frugal admin token
// create` (token list|revoke are in cli/admin_commands.cc, with the other admin reads).
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/command_table.h"
#include "cli/format.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

struct TokenOptions {
  std::string team;
  std::string user;
  std::string role;
};

Status RunWhoami(Session& s) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get("/v1/whoami")));
  Print(s, r.body, [&] {
    return RenderKeyValues({{"User", Text(r.body, "user")},
                            {"Team", Text(r.body, "team")},
                            {"Role", Text(r.body, "role")},
                            {"Scheduler", s.client.base_url()}});
  });
  return Status::Ok();
}

Status RunTeamCreate(Session& s, const std::string& name) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post("/v1/admin/teams", {{"name", name}})));
  Print(s, r.body, [&] {
    return "Created team " + Text(r.body, "name") + " (id " + Text(r.body, "id") + ").\n";
  });
  return Status::Ok();
}

Status RunTeamList(Session& s) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get("/v1/admin/teams")));
  Print(s, r.body, [&] { return RenderTeams(Field(r.body, "teams")); });
  return Status::Ok();
}

Status RunTokenCreate(Session& s, const TokenOptions& o) {
  const json body = {{"team", o.team}, {"user", o.user}, {"role", o.role}};
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post("/v1/admin/tokens", body)));
  // Only the token goes to stdout, so `TOKEN=$(frugal admin token create ...)` works.
  Print(s, r.body, [&] { return Text(r.body, "token") + "\n"; });
  if (s.output == OutputFormat::kTable) {
    s.err << "frugal: note: token for user " << o.user << " of team " << o.team << " (role "
          << o.role << "); it is shown only this once\n";
  }
  return Status::Ok();
}

class Whoami final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* sub = parent.add_subcommand("whoami", "Show the user, team and role of the token");
    registrar.OnParsed(*sub, [](Session& s) { return RunWhoami(s); });
  }
};

class TeamCreate final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* create = parent.add_subcommand("create", "Create a team");
    create->add_option("NAME", name_, "Team name")->required();
    registrar.OnParsed(*create, [this](Session& s) { return RunTeamCreate(s, name_); });
  }

 private:
  std::string name_;
};

class TeamList final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* list = parent.add_subcommand("list", "List teams");
    registrar.OnParsed(*list, [](Session& s) { return RunTeamList(s); });
  }
};

class TokenCreate final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* issue = parent.add_subcommand("create", "Create a token and print it (shown once)");
    issue->add_option("--team", options_.team, "Team of the token's user")->required();
    issue->add_option("--user", options_.user, "User (or node name, for a worker)")->required();
    issue
        ->add_option("--role", options_.role,
                     "researcher, admin, worker or metrics (reads /metrics)")
        ->required()
        ->check(CLI::IsMember({"researcher", "admin", "worker", "metrics"}));
    registrar.OnParsed(*issue, [this](Session& s) { return RunTokenCreate(s, options_); });
  }

 private:
  TokenOptions options_;
};

}  // namespace

std::unique_ptr<Command> NewWhoami() { return std::make_unique<Whoami>(); }
std::unique_ptr<Command> NewTeamCreate() { return std::make_unique<TeamCreate>(); }
std::unique_ptr<Command> NewTeamList() { return std::make_unique<TeamList>(); }
std::unique_ptr<Command> NewTokenCreate() { return std::make_unique<TokenCreate>(); }

}  // namespace frugal::cli
