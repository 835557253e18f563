// `frugal submit --dry-run` (where a job would go, what it would cost, by when, without
// submitting it) and `frugal why JOB` (why a job waits or runs where it does).
#include <CLI/CLI.hpp>
#include <ostream>

#include "cli/command_table.h"
#include "cli/format.h"
#include "cli/submit.h"

namespace frugal::cli {

using nlohmann::json;

Status RunDryRun(Session& s, const json& body) {
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/jobs?dry_run=true", body));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(r.body);
    return Status::Ok();
  }
  const json& q = Field(r.body, "quote");
  s.out << "Dry run: nothing was submitted.\n\n";
  Table t({"POOL", "KIND", "GPU", "EXPECTED", "RANGE", "FINISH", "PREEMPTIONS"});
  Table refused({"POOL", "WHY NOT"});
  for (const auto& p : Field(q, "pools")) {
    if (!p.value("allowed", false)) {
      refused.AddRow({Text(p, "pool"), Text(p, "why_not")});
      continue;
    }
    char pre[32];
    std::snprintf(pre, sizeof pre, "%.1f", p.value("expected_preemptions", 0.0));
    t.AddRow({Text(p, "pool"), Text(p, "capacity_kind"), Text(p, "gpu_type"),
              "$" + Text(p, "expected_cost"),
              "$" + Text(p, "cost_low") + " - $" + Text(p, "cost_high"),
              Text(p, "expected_finish"), pre});
  }
  if (!t.empty()) s.out << t.Render();
  if (!refused.empty()) s.out << "\nNot allowed:\n" << refused.Render();
  s.out << "\nRecommended: " << Text(q, "recommendation") << "\n";
  if (!Field(q, "on_demand_pool").is_null())
    s.out << "On-demand comparison: $" << Text(q, "on_demand_cost") << " on "
          << Text(q, "on_demand_pool") << "\n";
  if (!Field(q, "earliest_finish").is_null())
    s.out << "Earliest safe finish: " << Text(q, "earliest_finish") << " on "
          << Text(q, "earliest_pool") << "\n";
  if (!q.value("deadline_feasible", true)) s.out << "Deadline: " << Text(q, "refusal") << "\n";
  const json& learned = Field(q, "learned");
  if (learned.is_array() && !learned.empty()) {
    s.out << "\nLearned spot model:\n";
    for (const auto& o : learned) s.out << "  " << Text(o, "text") << "\n";
  }
  return Status::Ok();
}

namespace {

Status RunWhy(Session& s, std::int64_t id) {
  ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/jobs/" + std::to_string(id) + "/why"));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  const json& b = r.body;
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(b);
    return Status::Ok();
  }
  s.out << "Job " << id << " is " << Text(b, "state") << " (priority " << Text(b, "priority")
        << ").\n";
  if (!Text(b, "reason").empty()) s.out << "  " << Text(b, "reason") << "\n";
  const json& last = Field(b, "last_attempt");
  if (!last.is_null())
    s.out << "  Last attempt #" << Text(last, "number") << " on " << Text(last, "node")
          << " (pool " << Text(last, "pool") << ").\n";
  if (!Field(b, "factors_text").is_null())
    s.out << "  Order within its class: " << Text(b, "factors_text") << "\n";
  if (!Field(b, "higher_priority_pending").is_null())
    s.out << "  Ahead of it: " << Text(b, "higher_priority_pending")
          << " pending job(s) of higher priority; " << Text(b, "same_priority_pending")
          << " other pending job(s) of its priority compete by score.\n";
  const json& options = Field(b, "options");
  if (options.is_array() && !options.empty()) {
    s.out << "  Options, priced by the learned spot model:\n";
    for (const auto& o : options) s.out << "    " << Text(o, "text") << "\n";
    const json& od = Field(b, "on_demand");
    if (!od.is_null())
      s.out << "    on-demand " << Text(od, "pool") << ": $" << Text(od, "expected_cost") << "\n";
  }
  return Status::Ok();
}

class Why final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* why = parent.add_subcommand("why", "Explain why a job waits or runs where it does");
    why->add_option("JOB", job_id_, "Job id")->required();
    registrar.OnParsed(*why, [this](Session& s) { return RunWhy(s, job_id_); });
  }

 private:
  std::int64_t job_id_ = 0;
};

}  // namespace

std::unique_ptr<Command> NewWhy() { return std::make_unique<Why>(); }

}  // namespace frugal::cli
