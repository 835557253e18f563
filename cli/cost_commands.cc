// `frugal cost`: what was spent, by team, project, user, pool or job, with what was wasted
// and what spot saved; as a table, JSON or CSV.
#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>

#include "cli/arrays.h"
#include "cli/command_table.h"
#include "cli/format.h"

namespace frugal::cli {

using nlohmann::json;

namespace {

// "2026-11-01T00:00:00Z" as is; "-7d" = that long before now.
StatusOr<std::string> ReportTime(const std::string& text, Timestamp now) {
  if (!text.empty() && text[0] == '-') {
    ASSIGN_OR_RETURN(Seconds ago, ParseDuration(text.substr(1)));
    return FormatRfc3339(std::chrono::time_point_cast<Seconds>(now - ago));
  }
  ASSIGN_OR_RETURN(Timestamp t, ParseRfc3339(text));
  return FormatRfc3339(t);
}

std::string CsvCell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string Hours(const json& v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v.is_number() ? v.get<double>() : 0.0);
  return buf;
}

Status RunCost(Session& s, const std::string& by, const std::string& from, const std::string& to) {
  std::string path = "/v1/reports/cost?by=" + by;
  if (!from.empty()) {
    ASSIGN_OR_RETURN(auto t, ReportTime(from, s.now));
    path += "&from=" + t;
  }
  if (!to.empty()) {
    ASSIGN_OR_RETURN(auto t, ReportTime(to, s.now));
    path += "&to=" + t;
  }
  ASSIGN_OR_RETURN(auto r, s.client.Get(path));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  const json& b = r.body;
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(b);
    return Status::Ok();
  }
  const std::vector<std::string> headers = {
      by == "job" ? "JOB" : by == "pool" ? "POOL" : by == "user" ? "USER"
                        : by == "project" ? "PROJECT" : "TEAM",
      "SPEND $", "USEFUL $", "WASTED $", "GPU-HOURS", "JOBS", "SUCCEEDED", "$/SUCCESS",
      "SPOT SAVED $"};
  auto cells = [](const json& row) {
    return std::vector<std::string>{Text(row, "key"), Text(row, "spend"), Text(row, "useful"),
                                    Text(row, "wasted"), Hours(Field(row, "gpu_hours")),
                                    Text(row, "jobs"), Text(row, "succeeded_jobs"),
                                    Text(row, "cost_per_successful_job"),
                                    Text(row, "spot_savings")};
  };
  if (s.output == OutputFormat::kCsv) {
    auto line = [&](const std::vector<std::string>& v) {
      for (size_t i = 0; i < v.size(); ++i) s.out << (i ? "," : "") << CsvCell(v[i]);
      s.out << "\n";
    };
    line({by, "spend", "useful", "wasted", "gpu_hours", "jobs", "succeeded", "cost_per_success",
          "spot_savings"});
    for (const auto& row : Field(b, "rows")) line(cells(row));
    line(cells(Field(b, "total")));
    return Status::Ok();
  }
  s.out << "Cost from " << Text(b, "from") << " to " << Text(b, "to") << "\n";
  Table t(headers);
  for (const auto& row : Field(b, "rows")) t.AddRow(cells(row));
  t.AddRow(cells(Field(b, "total")));
  s.out << t.Render();
  const json& pools = Field(b, "pools");
  if (pools.is_array() && !pools.empty()) {
    s.out << "\nPools (busy vs paid GPU-hours; idle reserved time is waste):\n";
    Table p({"POOL", "KIND", "BUSY GPU-H", "PAID GPU-H", "UTILISATION", "SPEND $",
             "IDLE RESERVED $"});
    for (const auto& row : pools) {
      std::string util = "-";
      if (Field(row, "utilisation").is_number()) {
        char buf[16];
        std::snprintf(buf, sizeof buf, "%.0f%%", 100 * row["utilisation"].get<double>());
        util = buf;
      }
      p.AddRow({Text(row, "pool"), Text(row, "capacity_kind"), Hours(Field(row, "busy_gpu_hours")),
                Hours(Field(row, "paid_gpu_hours")), util, Text(row, "spend"),
                Text(row, "idle_reserved")});
    }
    s.out << p.Render();
  }
  // Guardrails: jobs whose peak GPU memory fitted a cheaper GPU type.
  const json& sizing = Field(b, "right_sizing");
  if (Field(sizing, "jobs").is_array() && !sizing["jobs"].empty()) {
    s.out << "\nRight-sizing (potential saving $" << Text(sizing, "potential_saving") << "):\n";
    Table r({"JOB", "SAVING $", "ADVICE"});
    for (const auto& row : sizing["jobs"])
      r.AddRow({Text(row, "job_id"), Text(row, "saving"), Text(row, "message")});
    s.out << r.Render();
  }
  return Status::Ok();
}

class Cost final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* cost =
        parent.add_subcommand("cost", "What was spent and wasted, and what spot saved");
    cost->add_option("--by", by_, "Group by team, project, user, pool or job")
        ->check(CLI::IsMember({"team", "project", "user", "pool", "job"}))
        ->capture_default_str();
    cost->add_option("--from", from_, "Start: RFC 3339 time or -DURATION (e.g. -7d)");
    cost->add_option("--to", to_, "End: RFC 3339 time or -DURATION (default now)");
    cost->add_option("--array", array_, "What one job array (a sweep) cost, all tasks together")
        ->check(CLI::PositiveNumber);
    registrar.OnParsed(*cost, [this](Session& s) {
      return array_ ? RunArrayCost(s, *array_) : RunCost(s, by_, from_, to_);
    });
    registrar.AlsoPrints(*cost, {"csv"});
  }

 private:
  std::string by_ = "team";
  std::string from_, to_;              // RFC 3339 or -DURATION (ago)
  std::optional<std::int64_t> array_;  // one job array's cost instead of a report
};

}  // namespace

std::unique_ptr<Command> NewCost() { return std::make_unique<Cost>(); }

}  // namespace frugal::cli
