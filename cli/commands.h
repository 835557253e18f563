// The `frugal` command line as a whole: the global options (-o, --url, --token), every
// subcommand of the command table (cli/command_table.cc), and running the one chosen.
// main() parses the command line with CLI11, then calls Commands::Run.
//
// Exit codes: 0 ok; 1 error (server errors are printed verbatim as "frugal: error: ...");
// 2 usage error. Every malformed flag value (durations, times, k=v, enums) is caught by a
// CLI11 validator during parsing, so usage errors all come out of CLI11 with its message;
// the one usage error found after parsing is an -o format the chosen command cannot print.
// Single-threaded.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"

namespace frugal::cli {

struct GlobalOptions {
  std::string output = "table";
  std::string url;    // empty: $FRUGAL_URL, the config file, or the default
  std::string token;  // empty: $FRUGAL_TOKEN or the config file
};

// Owns the global options and every command, and remembers which one the parse chose.
// Construct before parsing; it must outlive the parse and be used with that one `app`.
class Commands final : public Registrar {
 public:
  // Adds the global options and all subcommands to `app`.
  explicit Commands(CLI::App& app);
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // After a successful parse: resolves the scheduler URL and token, runs the chosen
  // subcommand, prints its result or error, and returns the exit code (0, 1, or 2 for an
  // -o the command cannot print).
  int Run(std::ostream& out, std::ostream& err);

  // Registrar, for the commands' Register only.
  void OnParsed(CLI::App& sub, Action action) override;
  void OnParsedLocal(CLI::App& sub, LocalAction action) override;
  void AlsoPrints(CLI::App& sub, std::vector<std::string> formats) override;

 private:
  // Why the chosen command cannot print global_.output, or nullopt when it can.
  std::optional<std::string> UnsupportedOutput() const;

  GlobalOptions global_;
  std::vector<std::unique_ptr<Command>> commands_;  // their flags point into them
  Action action_;
  const CLI::App* chosen_ = nullptr;  // the subcommand whose action_ runs
  std::map<const CLI::App*, std::vector<std::string>> extra_formats_;
  // A command that needs no scheduler connection (checkpoint): runs instead of action_.
  LocalAction local_action_;
};

}  // namespace frugal::cli
