// The table of `frugal`'s subcommands: every command in one place, in the order --help
// lists them. A Group is a command that only holds others (`frugal admin pool ...`).
#include "cli/command_table.h"

#include <CLI/CLI.hpp>
#include <string>
#include <utility>

namespace frugal::cli {

namespace {

using CommandList = std::vector<std::unique_ptr<Command>>;

template <typename... C>
CommandList List(C... commands) {
  CommandList list;
  (list.push_back(std::move(commands)), ...);
  return list;
}

// A subcommand that does nothing itself: one of its own subcommands must follow it.
class Group final : public Command {
 public:
  Group(std::string name, std::string help, CommandList children)
      : name_(std::move(name)), help_(std::move(help)), children_(std::move(children)) {}

  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* group = parent.add_subcommand(name_, help_);
    // Before the children are added: CLI11 copies a parent's subcommand limit into each.
    group->require_subcommand(1);
    for (auto& child : children_) child->Register(*group, registrar);
  }

 private:
  const std::string name_, help_;
  CommandList children_;
};

template <typename... C>
std::unique_ptr<Command> MakeGroup(std::string name, std::string help, C... children) {
  return std::make_unique<Group>(std::move(name), std::move(help), List(std::move(children)...));
}

}  // namespace

std::vector<std::unique_ptr<Command>> CommandTable() {
  return List(NewSubmit(), NewWhy(), NewCost(), NewBudget(), NewStatus(), NewList(), NewCancel(),
              NewWhoami(),
              MakeGroup("admin", "Administration (admin token needed)",
                        MakeGroup("team", "Manage teams", NewTeamCreate(), NewTeamList()),
                        MakeGroup("token", "Manage API tokens", NewTokenCreate(), NewTokenList(),
                                  NewTokenRevoke()),
                        MakeGroup("pool", "Manage capacity pools", NewPoolSet(), NewPoolList(),
                                  MakeGroup("history", "A spot pool's availability history",
                                            NewHistoryImport()),
                                  NewPoolAvailability()),
                        MakeGroup("quota", "Team quotas: GPUs a team may hold at once",
                                  NewQuotaSet(), NewQuotaGet()),
                        MakeGroup("budget", "Team budgets: money per month or week", NewBudgetSet(),
                                  NewBudgetGet()),
                        MakeGroup("guardrails", "max_runtime per class, approvals, idle GPUs",
                                  NewGuardrailsGet(), NewGuardrailsSet()),
                        NewApprove(), NewApply(), NewDiff(), NewGet(), NewAudit(),
                        MakeGroup("node", "List, drain, undrain or remove nodes", NewNodeList(),
                                  NewNodeDrain(), NewNodeUndrain(), NewNodeRemove())),
              NewLogs(), NewCheckpoint());
}

}  // namespace frugal::cli
