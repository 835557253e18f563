// `frugal admin guardrails get|set` and `frugal admin approve JOB` (issue 5 guardrails):
// max_runtime per priority class, approval of big premium requests, idle GPU reclamation
// and each team's idle policy. `set` changes only what its options name.
#include <CLI/CLI.hpp>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/command_table.h"
#include "cli/format.h"

namespace frugal::cli {

using nlohmann::json;

namespace {

std::string Seconds(const json& v) {
  return v.is_number_integer() ? FormatDuration(frugal::Seconds(v.get<std::int64_t>())) : "-";
}

void PrintGuardrails(Session& s, const json& g) {
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(g);
    return;
  }
  Table t({"CLASS", "DEFAULT MAX RUNTIME", "MAX RUNTIME"});
  for (const auto& [cls, rt] : Field(g, "priority_classes").items()) {
    t.AddRow({cls, Seconds(Field(rt, "default_max_runtime_seconds")),
              Seconds(Field(rt, "max_max_runtime_seconds"))});
  }
  s.out << (t.empty() ? "No max_runtime rules per priority class.\n" : t.Render());
  const json& a = Field(g, "approval");
  const json& types = Field(a, "premium_gpu_types");
  if (!types.is_array() || types.empty()) {
    s.out << "Approval: off (no premium GPU types)\n";
  } else {
    std::string list;
    for (const auto& v : types) list += (list.empty() ? "" : ",") + v.get<std::string>();
    s.out << "Approval: jobs asking more than " << Text(a, "above_gpus")
          << " GPUs that may run on " << list << " wait for `frugal admin approve`\n";
  }
  const json& i = Field(g, "idle");
  s.out << "Idle: every GPU of a job under " << Text(i, "threshold_percent") << "% for "
        << Seconds(Field(i, "window_seconds")) << " (team policy: warn or requeue)\n";
}

// "none" clears a class's value; anything else must be a duration.
StatusOr<json> RuntimeValue(const std::string& text, const char* flag) {
  if (text == "none") return json(nullptr);
  auto d = ParseDuration(text);
  if (!d.ok()) return InvalidArgument(std::string(flag) + ": " + d.status().message(), flag);
  return json(d->count());
}

class GuardrailsGet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* get = parent.add_subcommand("get", "Show the guardrails (and a team's idle policy)");
    get->add_option("--team", team_, "Also show this team's idle policy");
    registrar.OnParsed(*get, [this](Session& s) { return Run(s); });
  }

 private:
  Status Run(Session& s) const {
    ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/guardrails"));
    RETURN_IF_ERROR(api::ResponseStatus(r));
    PrintGuardrails(s, r.body);
    if (!team_.empty()) {
      ASSIGN_OR_RETURN(auto t, s.client.Get("/v1/admin/teams/" + team_ + "/idle-policy"));
      RETURN_IF_ERROR(api::ResponseStatus(t));
      s.out << "Team " << team_ << " idle policy: " << Text(t.body, "idle_policy") << "\n";
    }
    return Status::Ok();
  }

  std::string team_;
};

class GuardrailsSet final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override;

 private:
  Status Run(Session& s) const;

  std::string priority_class_;                 // --class: which class the runtime options apply to
  std::string default_runtime_, max_runtime_;  // durations, or "none" to clear
  std::optional<std::string> premium_types_;   // comma-separated; "" turns approval off
  std::optional<int> approval_above_gpus_, idle_threshold_;
  std::string idle_window_;
  std::string team_, idle_policy_;
};

void GuardrailsSet::Register(CLI::App& parent, Registrar& registrar) {
  CLI::App* set = parent.add_subcommand("set", "Change the guardrails named by the options");
  set->add_option("--class", priority_class_, "Priority class the runtime options apply to");
  set->add_option("--default-runtime", default_runtime_,
                  "max_runtime given to the class's jobs that set none (DURATION or none)");
  set->add_option("--max-runtime", max_runtime_,
                  "Most max_runtime a job of the class may ask (DURATION or none)");
  set->add_option("--premium-types", premium_types_,
                  "Premium GPU types, comma-separated (empty: approval off)");
  set->add_option("--approval-above-gpus", approval_above_gpus_,
                  "Jobs asking more GPUs than this that may run on premium types need approval")
      ->check(CLI::Range(0, 100000));
  set->add_option("--idle-threshold", idle_threshold_, "Idle below this GPU utilisation (percent)")
      ->check(CLI::Range(1, 100));
  set->add_option("--idle-window", idle_window_, "Idle for this long before acting (DURATION)");
  set->add_option("--team", team_, "Team whose idle policy --idle-policy sets");
  set->add_option("--idle-policy", idle_policy_, "warn, or requeue (checkpoint and requeue)")
      ->check(CLI::IsMember({"warn", "requeue"}));
  registrar.OnParsed(*set, [this](Session& s) { return Run(s); });
}

Status GuardrailsSet::Run(Session& s) const {
  if (idle_policy_.empty() != team_.empty()) {
    return InvalidArgument("--team and --idle-policy go together", "--idle-policy");
  }
  if ((!default_runtime_.empty() || !max_runtime_.empty()) && priority_class_.empty()) {
    return InvalidArgument("--default-runtime and --max-runtime need --class", "--class");
  }
  json body = json::object();
  if (!priority_class_.empty()) {
    json rt = json::object();
    if (!default_runtime_.empty()) {
      ASSIGN_OR_RETURN(rt["default_max_runtime_seconds"],
                       RuntimeValue(default_runtime_, "--default-runtime"));
    }
    if (!max_runtime_.empty()) {
      ASSIGN_OR_RETURN(rt["max_max_runtime_seconds"], RuntimeValue(max_runtime_, "--max-runtime"));
    }
    body["priority_classes"][priority_class_] = rt;
  }
  if (premium_types_) {
    json types = json::array();
    std::stringstream in(*premium_types_);
    for (std::string t; std::getline(in, t, ',');)
      if (!t.empty()) types.push_back(t);
    body["approval"]["premium_gpu_types"] = types;
  }
  if (approval_above_gpus_) body["approval"]["above_gpus"] = *approval_above_gpus_;
  if (idle_threshold_) body["idle"]["threshold_percent"] = *idle_threshold_;
  if (!idle_window_.empty()) {
    auto d = ParseDuration(idle_window_);
    if (!d.ok()) return InvalidArgument("--idle-window: " + d.status().message(), "--idle-window");
    body["idle"]["window_seconds"] = d->count();
  }
  if (!team_.empty()) {
    ASSIGN_OR_RETURN(auto t, s.client.Post("/v1/admin/teams/" + team_ + "/idle-policy",
                                           {{"idle_policy", idle_policy_}}));
    RETURN_IF_ERROR(api::ResponseStatus(t));
    if (body.empty()) {
      s.out << "Team " << team_ << " idle policy: " << Text(t.body, "idle_policy") << "\n";
      return Status::Ok();
    }
  }
  ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/guardrails", body));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  PrintGuardrails(s, r.body);
  return Status::Ok();
}

class Approve final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* approve = parent.add_subcommand("approve", "Release a job held for approval");
    approve->add_option("JOB", job_id_, "Job id")->required()->check(CLI::PositiveNumber);
    registrar.OnParsed(*approve, [this](Session& s) -> Status {
      ASSIGN_OR_RETURN(
          auto r,
          s.client.Post("/v1/admin/jobs/" + std::to_string(job_id_) + "/approve", json::object()));
      RETURN_IF_ERROR(api::ResponseStatus(r));
      if (s.output == OutputFormat::kJson) {
        s.out << PrettyJson(r.body);
      } else {
        s.out << "Job " << Text(r.body, "id") << " approved: " << Text(r.body, "state") << " ("
              << Text(r.body, "reason") << ")\n";
      }
      return Status::Ok();
    });
  }

 private:
  std::int64_t job_id_ = 0;
};

}  // namespace

std::unique_ptr<Command> NewGuardrailsGet() { return std::make_unique<GuardrailsGet>(); }
std::unique_ptr<Command> NewGuardrailsSet() { return std::make_unique<GuardrailsSet>(); }
std::unique_ptr<Command> NewApprove() { return std::make_unique<Approve>(); }

}  // namespace frugal::cli
