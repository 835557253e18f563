// One subcommand of the `frugal` CLI as an object: it owns its flag values, registers them
// on a CLI11 sub-app, and runs against a Session once the command line is parsed. Every
// command is listed in cli/command_table.cc; cli/commands.h runs the chosen one.
//
// Single-threaded: registration, parsing and the run all happen on main's thread.
// Errors: a malformed flag value is a CLI11 validator's usage error during parsing (exit 2);
// anything that fails later is a Status returned by the action, printed by Commands (exit 1).
#pragma once

#include <functional>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/client.h"
#include "common/clock.h"
#include "common/status.h"

namespace CLI {
class App;
}

namespace frugal::cli {

// csv: reports (frugal cost); yaml: `frugal admin get`; other commands print a table for both.
enum class OutputFormat { kTable, kJson, kCsv, kYaml };

// What a command needs once the command line is parsed. Single-threaded.
struct Session {
  api::Client& client;
  OutputFormat output;
  Timestamp now;  // read once, so every relative time in one output agrees
  std::ostream& out;
  std::ostream& err;
};

// How a command tells the dispatcher (Commands) what to run. Only called from
// Command::Register; `sub` is the sub-app the command just added, and the actions may
// capture the command itself (it outlives the run).
class Registrar {
 public:
  using Action = std::function<Status(Session&)>;
  // For a command that needs no scheduler: it writes its result to `out`.
  using LocalAction = std::function<Status(std::ostream& out)>;

  // Makes `action` the one that runs when `sub` appears on the command line.
  virtual void OnParsed(CLI::App& sub, Action action) = 0;
  // As OnParsed, but the run resolves no URL or token and checks no -o: the command works
  // where no scheduler can be reached (frugal checkpoint, inside a job).
  virtual void OnParsedLocal(CLI::App& sub, LocalAction action) = 0;
  // Output formats `sub` prints besides table and json (csv, yaml); -o anything else is a
  // usage error.
  virtual void AlsoPrints(CLI::App& sub, std::vector<std::string> formats) = 0;

 protected:
  ~Registrar() = default;  // not owned through this interface
};

// A subcommand, or a small family of them (admin node drain|undrain|remove). CLI11 writes
// the parsed flags into the object's members, so it must outlive the parse and the run:
// Commands owns every command for its whole life.
class Command {
 public:
  Command() = default;
  Command(const Command&) = delete;  // the sub-app and actions point into this object
  Command& operator=(const Command&) = delete;
  virtual ~Command() = default;

  // Adds the subcommand(s) with their flags, help and validators to `parent`, and tells
  // `registrar` what each runs. Called once, before parsing.
  virtual void Register(CLI::App& parent, Registrar& registrar) = 0;
};

// The response if the request went through and the server said 2xx, else the error.
StatusOr<api::ClientResponse> Checked(StatusOr<api::ClientResponse> response);

// Prints the server's JSON as it is (-o json), or else the text `table` renders.
void Print(Session& s, const nlohmann::json& body, const std::function<std::string()>& table);

}  // namespace frugal::cli
