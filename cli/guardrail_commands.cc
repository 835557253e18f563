// `frugal admin guardrails get|set` and `frugal admin approve JOB` (issue 5 guardrails):
// max_runtime per priority class, approval of big premium requests, idle GPU reclamation
// and each team's idle policy. `set` changes only what its options name.
#include <CLI/CLI.hpp>
#include <ostream>
#include <sstream>

#include "cli/commands.h"
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

}  // namespace

void Commands::AddGuardrails(CLI::App& admin) {
  auto& o = guardrails_;
  CLI::App* g = admin.add_subcommand("guardrails", "max_runtime per class, approvals, idle GPUs");
  g->require_subcommand(1);
  CLI::App* get = g->add_subcommand("get", "Show the guardrails (and a team's idle policy)");
  get->add_option("--team", o.team, "Also show this team's idle policy");
  OnParsed(*get, [this](Session& s) -> Status {
    ASSIGN_OR_RETURN(auto r, s.client.Get("/v1/admin/guardrails"));
    RETURN_IF_ERROR(api::ResponseStatus(r));
    PrintGuardrails(s, r.body);
    if (!guardrails_.team.empty()) {
      ASSIGN_OR_RETURN(auto t, s.client.Get("/v1/admin/teams/" + guardrails_.team + "/idle-policy"));
      RETURN_IF_ERROR(api::ResponseStatus(t));
      s.out << "Team " << guardrails_.team << " idle policy: " << Text(t.body, "idle_policy") << "\n";
    }
    return Status::Ok();
  });

  CLI::App* set = g->add_subcommand("set", "Change the guardrails named by the options");
  set->add_option("--class", o.priority_class, "Priority class the runtime options apply to");
  set->add_option("--default-runtime", o.default_runtime,
                  "max_runtime given to the class's jobs that set none (DURATION or none)");
  set->add_option("--max-runtime", o.max_runtime,
                  "Most max_runtime a job of the class may ask (DURATION or none)");
  set->add_option("--premium-types", o.premium_types,
                  "Premium GPU types, comma-separated (empty: approval off)");
  set->add_option("--approval-above-gpus", o.approval_above_gpus,
                  "Jobs asking more GPUs than this that may run on premium types need approval")
      ->check(CLI::Range(0, 100000));
  set->add_option("--idle-threshold", o.idle_threshold, "Idle below this GPU utilisation (percent)")
      ->check(CLI::Range(1, 100));
  set->add_option("--idle-window", o.idle_window, "Idle for this long before acting (DURATION)");
  set->add_option("--team", o.team, "Team whose idle policy --idle-policy sets");
  set->add_option("--idle-policy", o.idle_policy, "warn, or requeue (checkpoint and requeue)")
      ->check(CLI::IsMember({"warn", "requeue"}));
  OnParsed(*set, [this](Session& s) -> Status {
    const auto& o = guardrails_;
    if (o.idle_policy.empty() != o.team.empty()) {
      return InvalidArgument("--team and --idle-policy go together", "--idle-policy");
    }
    if ((!o.default_runtime.empty() || !o.max_runtime.empty()) && o.priority_class.empty()) {
      return InvalidArgument("--default-runtime and --max-runtime need --class", "--class");
    }
    json body = json::object();
    if (!o.priority_class.empty()) {
      json rt = json::object();
      if (!o.default_runtime.empty()) {
        ASSIGN_OR_RETURN(rt["default_max_runtime_seconds"],
                         RuntimeValue(o.default_runtime, "--default-runtime"));
      }
      if (!o.max_runtime.empty()) {
        ASSIGN_OR_RETURN(rt["max_max_runtime_seconds"], RuntimeValue(o.max_runtime, "--max-runtime"));
      }
      body["priority_classes"][o.priority_class] = rt;
    }
    if (o.premium_types) {
      json types = json::array();
      std::stringstream in(*o.premium_types);
      for (std::string t; std::getline(in, t, ',');)
        if (!t.empty()) types.push_back(t);
      body["approval"]["premium_gpu_types"] = types;
    }
    if (o.approval_above_gpus) body["approval"]["above_gpus"] = *o.approval_above_gpus;
    if (o.idle_threshold) body["idle"]["threshold_percent"] = *o.idle_threshold;
    if (!o.idle_window.empty()) {
      auto d = ParseDuration(o.idle_window);
      if (!d.ok()) return InvalidArgument("--idle-window: " + d.status().message(), "--idle-window");
      body["idle"]["window_seconds"] = d->count();
    }
    if (!o.team.empty()) {
      ASSIGN_OR_RETURN(auto t, s.client.Post("/v1/admin/teams/" + o.team + "/idle-policy",
                                             {{"idle_policy", o.idle_policy}}));
      RETURN_IF_ERROR(api::ResponseStatus(t));
      if (body.empty()) {
        s.out << "Team " << o.team << " idle policy: " << Text(t.body, "idle_policy") << "\n";
        return Status::Ok();
      }
    }
    ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/guardrails", body));
    RETURN_IF_ERROR(api::ResponseStatus(r));
    PrintGuardrails(s, r.body);
    return Status::Ok();
  });

  CLI::App* approve = admin.add_subcommand("approve", "Release a job held for approval");
  approve->add_option("JOB", o.approve_job, "Job id")->required()->check(CLI::PositiveNumber);
  OnParsed(*approve, [this](Session& s) -> Status {
    ASSIGN_OR_RETURN(auto r, s.client.Post("/v1/admin/jobs/" +
                                               std::to_string(guardrails_.approve_job) + "/approve",
                                           json::object()));
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

}  // namespace frugal::cli
