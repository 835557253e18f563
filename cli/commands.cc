#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <ostream>
#include <utility>

#include "cli/cli_config.h"
#include "cli/command_table.h"
#include "cli/flag_checks.h"

namespace frugal::cli {

namespace {

int Fail(std::ostream& err, const Status& status) {
  err << "frugal: error: " << status.message() << "\n";
  return 1;
}

}  // namespace

Commands::Commands(CLI::App& app) {
  app.description("frugal: submit GPU batch jobs to the Frugal scheduler and follow them");
  app.footer(
      "The scheduler URL and token come from --url/--token, else $FRUGAL_URL/$FRUGAL_TOKEN, "
      "else\n$XDG_CONFIG_HOME/frugal/config.yaml (default ~/.config/frugal/config.yaml; keys "
      "url, token). Several scheduler URLs, comma-separated, fail over\nbetween schedulers that share a database.\nExit codes: 0 ok, 1 error, 2 usage error.");
  app.failure_message([](const CLI::App* failed, const CLI::Error& e) {
    return "frugal: error: " + CLI::FailureMessage::simple(failed, e);
  });
  app.require_subcommand(1);
  app.fallthrough();  // global options may also come after the subcommand
  app.add_option("-o,--output", global_.output,
                 "Output format: table, json, csv (reports) or yaml (admin get)")
      ->check(CLI::IsMember({"table", "json", "csv", "yaml"}))
      ->capture_default_str();
  app.add_option("--url", global_.url, "Scheduler URL, or several comma-separated to fail over (default " +
                                   std::string(kDefaultUrl) + ")")
      ->check(StatusValidator(
          [](const std::string& url) { return api::Client(url, "").url_status(); }, "URL"));
  app.add_option("--token", global_.token, "API token");
  // After the global settings: CLI11 copies some of them (footer, failure message,
  // fallthrough, subcommand limit) into each subcommand as it is added.
  commands_ = CommandTable();
  for (auto& command : commands_) command->Register(app, *this);
}

void Commands::OnParsed(CLI::App& sub, Action action) {
  sub.callback([this, &sub, action = std::move(action)] {
    action_ = action;
    chosen_ = &sub;
  });
}

void Commands::OnParsedLocal(CLI::App& sub, LocalAction action) {
  sub.callback([this, action = std::move(action)] { local_action_ = action; });
}

void Commands::AlsoPrints(CLI::App& sub, std::vector<std::string> formats) {
  extra_formats_[&sub] = std::move(formats);
}

std::optional<std::string> Commands::UnsupportedOutput() const {
  if (global_.output == "table" || global_.output == "json" || chosen_ == nullptr) {
    return std::nullopt;
  }
  auto it = extra_formats_.find(chosen_);
  std::vector<std::string> formats = {"table", "json"};
  if (it != extra_formats_.end()) formats.insert(formats.end(), it->second.begin(), it->second.end());
  if (std::find(formats.begin(), formats.end(), global_.output) != formats.end()) {
    return std::nullopt;
  }
  std::string name, allowed;
  for (const CLI::App* a = chosen_; a != nullptr && a->get_parent() != nullptr; a = a->get_parent()) {
    name = a->get_name() + (name.empty() ? "" : " " + name);
  }
  for (const auto& f : formats) allowed += (allowed.empty() ? "" : ", ") + f;
  return "-o " + global_.output + " is not supported by 'frugal " + name + "' (it prints " +
         allowed + ")";
}

int Commands::Run(std::ostream& out, std::ostream& err) {
  if (local_action_) {
    const Status status = local_action_(out);
    return status.ok() ? 0 : Fail(err, status);
  }
  if (!action_) return Fail(err, Internal("no command was chosen"));
  if (auto unsupported = UnsupportedOutput()) {
    err << "frugal: error: " << *unsupported << "\n";
    return 2;  // a usage error, caught before anything is sent
  }
  auto config = ResolveConfig(SourcesFromEnvironment(global_.url, global_.token));
  if (!config.ok()) return Fail(err, config.status());
  api::Client client(config->url, config->token);
  if (!client.url_status().ok()) return Fail(err, client.url_status());
  const OutputFormat format = global_.output == "json"  ? OutputFormat::kJson
                              : global_.output == "csv" ? OutputFormat::kCsv
                              : global_.output == "yaml" ? OutputFormat::kYaml
                                                        : OutputFormat::kTable;
  Session session{client, format, SystemClock().Now(), out, err};
  const Status status = action_(session);
  return status.ok() ? 0 : Fail(err, status);
}

}  // namespace frugal::cli
