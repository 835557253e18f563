// Every subcommand of `frugal`, as the table in cli/command_table.cc lists them. Each
// New* returns a fresh command (cli/command.h) that the caller owns; the file that defines
// it is named beside it.
#pragma once

#include <memory>
#include <vector>

#include "cli/command.h"

namespace frugal::cli {

// The top-level commands in the order `frugal --help` lists them, with `admin` and its
// groups holding their subcommands.
std::vector<std::unique_ptr<Command>> CommandTable();

std::unique_ptr<Command> NewSubmit();  // cli/submit_command.cc
std::unique_ptr<Command> NewWhy();     // cli/placement_commands.cc
std::unique_ptr<Command> NewCost();    // cli/cost_commands.cc
// budget [TEAM], admin budget set|get (cli/budget_commands.cc)
std::unique_ptr<Command> NewBudget();
std::unique_ptr<Command> NewBudgetSet();
std::unique_ptr<Command> NewBudgetGet();
// status, list, cancel (cli/job_commands.cc)
std::unique_ptr<Command> NewStatus();
std::unique_ptr<Command> NewList();
std::unique_ptr<Command> NewCancel();
// whoami, admin team create|list, admin token create (cli/account_commands.cc)
std::unique_ptr<Command> NewWhoami();
std::unique_ptr<Command> NewTeamCreate();
std::unique_ptr<Command> NewTeamList();
std::unique_ptr<Command> NewTokenCreate();
// admin apply|diff|get|audit, admin token list|revoke (cli/admin_commands.cc)
std::unique_ptr<Command> NewApply();
std::unique_ptr<Command> NewDiff();
std::unique_ptr<Command> NewGet();
std::unique_ptr<Command> NewAudit();
std::unique_ptr<Command> NewTokenList();
std::unique_ptr<Command> NewTokenRevoke();
// admin pool set|list (cli/pool_commands.cc)
std::unique_ptr<Command> NewPoolSet();
std::unique_ptr<Command> NewPoolList();
// admin pool history import, admin pool availability (cli/availability_commands.cc)
std::unique_ptr<Command> NewHistoryImport();
std::unique_ptr<Command> NewPoolAvailability();
// admin quota set|get (cli/quota_commands.cc)
std::unique_ptr<Command> NewQuotaSet();
std::unique_ptr<Command> NewQuotaGet();
// admin guardrails get|set, admin approve (cli/guardrail_commands.cc)
std::unique_ptr<Command> NewGuardrailsGet();
std::unique_ptr<Command> NewGuardrailsSet();
std::unique_ptr<Command> NewApprove();
// admin node list|drain|undrain|remove (cli/node_commands.cc)
std::unique_ptr<Command> NewNodeList();
std::unique_ptr<Command> NewNodeDrain();
std::unique_ptr<Command> NewNodeUndrain();
std::unique_ptr<Command> NewNodeRemove();
// logs, checkpoint (cli/job_io_commands.cc)
std::unique_ptr<Command> NewLogs();
std::unique_ptr<Command> NewCheckpoint();

}  // namespace frugal::cli
