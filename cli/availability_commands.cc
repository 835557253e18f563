// `frugal admin pool history import POOL FILE.csv` and `frugal admin pool availability
// POOL` (issue 14, decision 0023): seed a spot pool's learned availability model from a
// series in the shared traces' CSV format, and show the model.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <ostream>
#include <sstream>

#include "cli/command_table.h"
#include "scheduler/model/availability_history.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read " + path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void PrintAvailability(Session& s, const json& a) {
  if (s.output == OutputFormat::kJson) {
    s.out << a.dump(2) << "\n";
    return;
  }
  const long long spell = a.value("spell_seconds", 0LL);
  char line[256];
  const bool up = a.value("up", false);
  if (a.value("assumed", false)) {
    std::snprintf(line, sizeof line,
                  "Pool %s: assumed up (no node now, and no stockout or reclaim since the last"
                  " was released)\n",
                  a.value("pool", "").c_str());
  } else {
    std::snprintf(line, sizeof line, "Pool %s: %s for %lldh%02lldm\n",
                  a.value("pool", "").c_str(), up ? "up" : "down", spell / 3600,
                  spell % 3600 / 60);
  }
  s.out << line;
  std::snprintf(line, sizeof line, "Evidence: %.0f ticks observed, %.0f imported (%lld s ticks)\n",
                a.value("observed_ticks", 0.0), a.value("imported_ticks", 0.0),
                a.value("tick_seconds", 0LL));
  s.out << line;
  if (a.contains("imported_source") && a["imported_source"].is_string())
    s.out << "Imported: " << a["imported_source"].get<std::string>() << "\n";
  s.out << "Fitted: "
        << (a["fitted_at"].is_string() ? a["fitted_at"].get<std::string>() : "never") << "\n";
  s.out << "AGE FROM   UP HAZARD  DOWN HAZARD  (chance the spell ends in the next tick)\n";
  for (const auto& b : a["bins"]) {
    std::snprintf(line, sizeof line, "%7llds  %9.4f  %11.4f\n",
                  b.value("from_seconds", 0LL), b.value("up_hazard", 0.0),
                  b.value("down_hazard", 0.0));
    s.out << line;
  }
}

Status RunHistoryImport(Session& s, const std::string& pool, const std::string& file,
                        const std::string& zone, const std::string& column) {
  ASSIGN_OR_RETURN(std::string text, ReadWholeFile(file));
  // Picked and checked here so that only the chosen series travels (a trace file may hold
  // many zones and be larger than a request may be); the server parses it again.
  ASSIGN_OR_RETURN(auto series, model::ParseAvailabilityCsv(text, zone, column));
  std::string source = file.substr(file.find_last_of('/') + 1);
  if (!zone.empty()) source += " zone " + zone;
  if (!column.empty()) source += " column " + column;
  json body = {{"csv", model::SeriesToCsv(series)}, {"source", source}};
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/pools/" + pool + "/availability/history",
                                         body));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  PrintAvailability(s, r.body);
  return Status::Ok();
}

Status RunAvailability(Session& s, const std::string& pool) {
  ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/pools/" + pool + "/availability"));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  PrintAvailability(s, r.body);
  return Status::Ok();
}

class HistoryImport final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* import_cmd = parent.add_subcommand(
        "import", "Seed a spot pool's availability model from a CSV of the shared traces' format");
    import_cmd->add_option("POOL", pool_, "Spot pool name")->required();
    import_cmd
        ->add_option("FILE", file_,
                     "CSV: a time column (elapsed_s or timestamp_utc) and"
                     " an availability column (1 = available)")
        ->required();
    import_cmd->add_option("--column", column_,
                           "Availability column (default: available, or the only one)");
    import_cmd->add_option("--zone", zone_, "Zone whose rows to read, when the file has several");
    registrar.OnParsed(*import_cmd, [this](Session& s) {
      return RunHistoryImport(s, pool_, file_, zone_, column_);
    });
  }

 private:
  std::string pool_, file_, zone_, column_;
};

class PoolAvailability final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* show = parent.add_subcommand(
        "availability", "Show a spot pool's learned availability: state now, evidence, hazards");
    show->add_option("POOL", pool_, "Spot pool name")->required();
    registrar.OnParsed(*show, [this](Session& s) { return RunAvailability(s, pool_); });
  }

 private:
  std::string pool_;
};

}  // namespace

std::unique_ptr<Command> NewHistoryImport() { return std::make_unique<HistoryImport>(); }
std::unique_ptr<Command> NewPoolAvailability() { return std::make_unique<PoolAvailability>(); }

}  // namespace frugal::cli
