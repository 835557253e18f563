#include "cli/commands.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <optional>
#include <ostream>
#include <utility>

#include "cli/cli_config.h"
#include "cli/format.h"
#include "common/money.h"
#include "scheduler/model/job.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

// ---- Parsing flag values. Each is also a CLI11 validator, so bad input is a usage error.

StatusOr<std::pair<std::string, std::string>> SplitKeyValue(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("expected KEY=VALUE, got '" + text + "'");
  }
  return std::make_pair(text.substr(0, eq), text.substr(eq + 1));
}

// "+6h" is `now` plus a duration; anything else must be an RFC 3339 time.
StatusOr<Timestamp> ParseDeadline(const std::string& text, Timestamp now) {
  if (!text.empty() && text.front() == '+') {
    ASSIGN_OR_RETURN(Seconds d, ParseDuration(text.substr(1)));
    // Whole seconds: the deadline is shown back to people.
    return Timestamp(std::chrono::time_point_cast<Seconds>(now) + d);
  }
  auto t = ParseRfc3339(text);
  if (!t.ok()) {
    return InvalidArgument(
        "expected an RFC 3339 time (2026-11-22T18:00:00Z) or +DURATION (+6h), "
        "got '" +
        text + "'");
  }
  return t;
}

// Adapts a Status-returning check to CLI11, whose validators return "" for valid input.
CLI::Validator StatusValidator(std::function<Status(const std::string&)> check,
                               std::string description) {
  return CLI::Validator(
      [check = std::move(check)](std::string& value) -> std::string {
        const Status st = check(value);
        return st.ok() ? "" : st.message();
      },
      std::move(description));
}

const CLI::Validator& DurationCheck() {
  static const CLI::Validator v =
      StatusValidator([](const std::string& s) { return ParseDuration(s).status(); }, "DURATION");
  return v;
}

// Digits only, at least 1: CLI11's PositiveNumber parses a double and words its errors
// for one. `max_digits` keeps the value inside int (9) or int64 (18).
CLI::Validator PositiveIntegerCheck(std::size_t max_digits, std::string description) {
  return StatusValidator(
      [max_digits](const std::string& s) {
        const bool digits = !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || s.find_first_not_of('0') == std::string::npos) {
          return InvalidArgument("expected a positive integer, got '" + s + "'");
        }
        if (s.size() - std::min(s.size(), s.find_first_not_of('0')) > max_digits) {
          return InvalidArgument("'" + s + "' is too large");
        }
        return Status::Ok();
      },
      std::move(description));
}

const CLI::Validator& KeyValueCheck() {
  static const CLI::Validator v =
      StatusValidator([](const std::string& s) { return SplitKeyValue(s).status(); }, "KEY=VALUE");
  return v;
}

Status AddKeyValues(json& body, const char* field, const std::vector<std::string>& items) {
  if (items.empty()) return Status::Ok();
  json object = json::object();
  for (const auto& item : items) {
    ASSIGN_OR_RETURN(auto kv, SplitKeyValue(item));
    object[kv.first] = kv.second;  // a repeated key: the later one wins, as in a shell
  }
  body[field] = std::move(object);
  return Status::Ok();
}

Status AddSeconds(json& body, const char* field, const std::string& text) {
  if (text.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(Seconds d, ParseDuration(text));
  body[field] = d.count();
  return Status::Ok();
}

// ---- Talking to the scheduler.


}  // namespace

StatusOr<api::ClientResponse> Checked(StatusOr<api::ClientResponse> response) {
  if (!response.ok()) return response.status();
  RETURN_IF_ERROR(api::ResponseStatus(*response));
  return response;
}

namespace {

std::string JobPath(std::int64_t id) { return "/v1/jobs/" + std::to_string(id); }

// Prints the server's JSON as it is, or the table rendering of it.
void Print(Session& s, const json& body, const std::function<std::string()>& table) {
  s.out << (s.output == OutputFormat::kJson ? PrettyJson(body) : table());
}

// ---- The commands.

// After a submit: "Expected cost $412.00 on a100-od; team vision has $19,588.00 left of its
// $20,000.00 monthly budget." Each half only when the server sent it.
std::string BudgetLine(const json& r) {
  auto usd = [](const json& o, const char* key) {  // "30.000000" -> "$30.00"
    auto m = ParseDollars(Text(o, key), /*allow_negative=*/true);
    return m.ok() ? (*m < 0 ? "-$" + FormatDollars(-*m) : "$" + FormatDollars(*m)) : Text(o, key);
  };
  std::string line;
  if (r.contains("expected_cost"))
    line = "Expected cost " + usd(r, "expected_cost") + " on " + Text(r, "expected_pool");
  if (r.contains("budget")) {
    const json& b = r["budget"];
    line += std::string(line.empty() ? "Team " : "; team ") + Text(r, "team") + " has " +
            usd(b, "left") + " left of its " + usd(b, "limit") + " " + Text(b, "period") +
            (Field(b, "hard").get<bool>() ? " hard" : "") + " budget";
  }
  return line.empty() ? "" : line + ".\n";
}

// Jobs per POST /v1/jobs:batch: the server's limit.
constexpr std::size_t kBatchJobs = 10000;

// The job specs of a JSONL file, one object per line (blank lines skipped), and the line
// each came from.
StatusOr<std::pair<json, std::vector<int>>> ReadJsonLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return InvalidArgument("--file: cannot read '" + path + "'");
  json specs = json::array();
  std::vector<int> lines;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    json spec = json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (spec.is_discarded() || !spec.is_object())
      return InvalidArgument(path + ":" + std::to_string(n) +
                             ": expected one JSON object per line (a job spec as POST /v1/jobs "
                             "takes)");
    specs.push_back(std::move(spec));
    lines.push_back(n);
  }
  if (specs.empty()) return InvalidArgument("--file: '" + path + "' holds no job specs");
  return std::make_pair(std::move(specs), std::move(lines));
}

// The server names a batch's item as jobs[i]; the user knows it as a line of the file.
Status AtLine(const Status& st, const std::string& path, const std::vector<int>& lines,
              std::size_t first) {
  const std::string& m = st.message();
  const auto close = m.find("]: ");
  if (m.rfind("jobs[", 0) == 0 && close != std::string::npos && close > 5 && close < 12) {
    const std::size_t i = first + std::stoul(m.substr(5, close - 5));
    if (i < lines.size())
      return Status(st.code(), path + ":" + std::to_string(lines[i]) + ": " + m.substr(close + 3),
                    st.field());
  }
  return st;
}

// submit --file: every spec of the file, in batches of kBatchJobs, each stored whole or
// not at all. With --idempotency-key K, batch b is sent with key K/b, so the same command
// run again stores nothing twice.
Status RunSubmitFile(Session& s, const SubmitOptions& o) {
  ASSIGN_OR_RETURN(auto file, ReadJsonLines(o.file));
  const auto& [specs, lines] = file;
  json all = json::array();
  int created = 0;
  for (std::size_t first = 0; first < specs.size(); first += kBatchJobs) {
    const std::size_t end = std::min(specs.size(), first + kBatchJobs);
    json body = {{"jobs", json(specs.begin() + first, specs.begin() + end)}};
    std::map<std::string, std::string> headers;
    if (!o.idempotency_key.empty())
      headers["Idempotency-Key"] = o.idempotency_key + "/" + std::to_string(first / kBatchJobs);
    auto r = Checked(s.client.Post("/v1/jobs:batch", body, headers));
    if (!r.ok()) {
      Status st = AtLine(r.status(), o.file, lines, first);
      if (first == 0) return st;
      return Status(st.code(), st.message() + " (the jobs of lines " + std::to_string(lines[0]) +
                                   " to " + std::to_string(lines[first - 1]) +
                                   " were submitted; none after)", st.field());
    }
    created += Field(r->body, "created").get<int>();
    for (const auto& j : Field(r->body, "jobs")) all.push_back(j);
  }
  const json out = {{"count", all.size()}, {"created", created}, {"jobs", all}};
  Print(s, out, [&] {
    std::map<std::string, int> states;
    for (const auto& j : all) ++states[Text(j, "state")];
    std::string by_state;
    for (const auto& [state, n] : states)
      by_state += (by_state.empty() ? "" : ", ") + std::to_string(n) + " " + state;
    std::string line = "Submitted " + std::to_string(created) + " of " +
                       std::to_string(all.size()) + " jobs, ids " + Text(all.front(), "id") +
                       " to " + Text(all.back(), "id") + " (" + by_state + ")";
    if (created < static_cast<int>(all.size()))
      line += "; " + std::to_string(all.size() - created) +
              " were stored by an earlier run with the same --idempotency-key";
    return line + ".\n";
  });
  return Status::Ok();
}

Status RunSubmit(Session& s, const SubmitOptions& o) {
  if (!o.file.empty()) return RunSubmitFile(s, o);
  if (!o.array.empty() && !o.dry_run) return RunSubmitArray(s, o);
  if (o.command.empty())
    return InvalidArgument("submit needs the job's command after --, or --file FILE");
  ASSIGN_OR_RETURN(json body, BuildSubmitBody(o, s.now));
  if (o.dry_run) return RunDryRun(s, body);
  std::map<std::string, std::string> headers;
  if (!o.idempotency_key.empty()) headers["Idempotency-Key"] = o.idempotency_key;
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post("/v1/jobs", body, headers)));
  if (r.status == 200) {
    s.err << "frugal: note: idempotency key already used with this request; "
             "showing the job it created\n";
  }
  Print(s, r.body, [&] {
    Table t({"ID", "STATE"});
    t.AddRow({Text(r.body, "id"), Text(r.body, "state")});
    return t.Render() + BudgetLine(r.body);
  });
  return Status::Ok();
}

Status RunStatus(Session& s, std::int64_t id) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get(JobPath(id))));
  Print(s, r.body, [&] { return RenderJobDetail(r.body, s.now); });
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> ListParams(const ListOptions& o,
                                                            const std::string& cursor) {
  std::vector<std::pair<std::string, std::string>> params;
  if (o.array) params.emplace_back("array", std::to_string(*o.array));
  if (!o.state.empty()) params.emplace_back("state", o.state);
  if (!o.team.empty()) params.emplace_back("team", o.team);
  if (!o.user.empty()) params.emplace_back("user", o.user);
  if (!o.label.empty()) params.emplace_back("label", o.label);
  if (o.limit) params.emplace_back("limit", std::to_string(*o.limit));
  if (!cursor.empty()) params.emplace_back("cursor", cursor);
  return params;
}

// Every page of GET /v1/jobs for `o` (o.all is ignored).
StatusOr<json> FetchAllJobs(Session& s, const ListOptions& o) {
  json jobs = json::array();
  std::string cursor;
  while (true) {
    const std::string path = api::WithQuery("/v1/jobs", ListParams(o, cursor));
    ASSIGN_OR_RETURN(auto r, Checked(s.client.Get(path)));
    const std::string next = Text(r.body, "next_cursor");
    const json& page = Field(r.body, "jobs");
    if (page.is_array()) jobs.insert(jobs.end(), page.begin(), page.end());
    if (next.empty()) return jobs;
    // A cursor that does not move would loop forever; a broken server must not hang us.
    if (next == cursor) return Internal("scheduler returned the same next_cursor twice");
    cursor = next;
  }
}

Status RunList(Session& s, const ListOptions& o) {
  if (!o.all) {
    const std::string path = api::WithQuery("/v1/jobs", ListParams(o, ""));
    ASSIGN_OR_RETURN(auto r, Checked(s.client.Get(path)));
    Print(s, r.body, [&] { return RenderJobList(Field(r.body, "jobs"), s.now); });
    if (!Text(r.body, "next_cursor").empty() && s.output == OutputFormat::kTable) {
      s.err << "frugal: note: more jobs exist; use --all or a larger --limit\n";
    }
    return Status::Ok();
  }
  ASSIGN_OR_RETURN(json jobs, FetchAllJobs(s, o));
  const json all = {{"jobs", jobs}, {"next_cursor", nullptr}};
  Print(s, all, [&] { return RenderJobList(jobs, s.now); });
  return Status::Ok();
}

std::string CancelText(const json& job) {
  const std::string id = Text(job, "id"), state = Text(job, "state");
  if (state == "cancelled") return "Job " + id + " cancelled.\n";
  if (Field(job, "cancel_requested") == true) {
    return "Job " + id + " is " + state + ": cancel requested, its worker will stop it.\n";
  }
  return "Job " + id + " is " + state + ".\n";
}

// One job: its reply as before. Several (ids, or every unfinished job with a label): each
// is cancelled in turn and a failure does not stop the rest; the command fails if any did.
Status RunCancel(Session& s, const CancelOptions& o) {
  std::vector<std::int64_t> ids = o.ids;
  if (!o.label.empty()) {
    ListOptions list;
    list.label = o.label;
    list.limit = 500;
    ASSIGN_OR_RETURN(json jobs, FetchAllJobs(s, list));
    for (const json& job : jobs) {
      auto state = model::ParseJobState(Text(job, "state"));
      if (state.ok() && model::IsTerminal(*state)) continue;
      if (Field(job, "cancel_requested") == true) continue;
      if (Field(job, "id").is_number_integer()) ids.push_back(Field(job, "id").get<std::int64_t>());
    }
    if (ids.empty()) {
      Print(s, json{{"jobs", json::array()}, {"errors", json::array()}},
            [&] { return "No unfinished job has label " + o.label + ".\n"; });
      return Status::Ok();
    }
  }
  if (ids.size() == 1 && o.label.empty()) {
    ASSIGN_OR_RETURN(auto r, Checked(s.client.Post(JobPath(ids[0]) + "/cancel")));
    Print(s, r.body, [&] { return CancelText(r.body); });
    return Status::Ok();
  }
  json done = json::array(), errors = json::array();
  std::string text;
  for (std::int64_t id : ids) {
    auto r = Checked(s.client.Post(JobPath(id) + "/cancel"));
    if (r.ok()) {
      done.push_back(r->body);
      text += CancelText(r->body);
    } else {
      errors.push_back({{"id", id}, {"error", r.status().message()}});
      text += "Job " + std::to_string(id) + ": " + r.status().message() + "\n";
    }
  }
  Print(s, json{{"jobs", done}, {"errors", errors}}, [&] { return text; });
  if (errors.empty()) return Status::Ok();
  return Status(StatusCode::kFailedPrecondition,
                std::to_string(errors.size()) + " of " + std::to_string(ids.size()) +
                    " cancels failed (see above)");
}

Status RunWhoami(Session& s) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get("/v1/whoami")));
  Print(s, r.body, [&] {
    return RenderKeyValues({{"User", Text(r.body, "user")},
                            {"Team", Text(r.body, "team")},
                            {"Role", Text(r.body, "role")},
                            {"Scheduler", s.client.base_url()}});
  });
  return Status::Ok();
}

Status RunTeamCreate(Session& s, const std::string& name) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post("/v1/admin/teams", {{"name", name}})));
  Print(s, r.body, [&] {
    return "Created team " + Text(r.body, "name") + " (id " + Text(r.body, "id") + ").\n";
  });
  return Status::Ok();
}

Status RunTeamList(Session& s) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get("/v1/admin/teams")));
  Print(s, r.body, [&] { return RenderTeams(Field(r.body, "teams")); });
  return Status::Ok();
}

Status RunTokenCreate(Session& s, const TokenOptions& o) {
  const json body = {{"team", o.team}, {"user", o.user}, {"role", o.role}};
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post("/v1/admin/tokens", body)));
  // Only the token goes to stdout, so `TOKEN=$(frugal admin token create ...)` works.
  Print(s, r.body, [&] { return Text(r.body, "token") + "\n"; });
  if (s.output == OutputFormat::kTable) {
    s.err << "frugal: note: token for user " << o.user << " of team " << o.team << " (role "
          << o.role << "); it is shown only this once\n";
  }
  return Status::Ok();
}

int Fail(std::ostream& err, const Status& status) {
  err << "frugal: error: " << status.message() << "\n";
  return 1;
}

}  // namespace

StatusOr<json> BuildSubmitBody(const SubmitOptions& o, Timestamp now) {
  json body = {{"command", o.command}};
  if (o.gpus_per_node && !o.nodes)
    return InvalidArgument("--gpus-per-node needs --nodes N", "--gpus-per-node");
  if (o.nodes) {
    // The API takes the gang's total; --gpus-per-node is the way people think of it.
    const int per = o.gpus_per_node.value_or(o.gpus ? 0 : 1);
    if (o.gpus && o.gpus_per_node && *o.gpus != *o.nodes * per)
      return InvalidArgument("--gpus " + std::to_string(*o.gpus) + " is not --nodes x " +
                                 "--gpus-per-node (" + std::to_string(*o.nodes * per) +
                                 "); give one of them",
                             "--gpus");
    body["nodes"] = *o.nodes;
    body["gpus"] = o.gpus.value_or(*o.nodes * per);
  } else if (o.gpus) {
    body["gpus"] = *o.gpus;
  }
  if (!o.gpu_types.empty()) body["gpu_types"] = o.gpu_types;
  if (o.min_gpu_mem_gb) body["min_gpu_mem_gb"] = *o.min_gpu_mem_gb;
  if (!o.priority.empty()) body["priority"] = o.priority;
  if (!o.deadline.empty()) {
    auto deadline = ParseDeadline(o.deadline, now);
    if (!deadline.ok()) return InvalidArgument(deadline.status().message(), "--deadline");
    body["deadline"] = FormatRfc3339(*deadline);
  }
  RETURN_IF_ERROR(AddSeconds(body, "estimate_seconds", o.estimate));
  RETURN_IF_ERROR(AddSeconds(body, "max_runtime_seconds", o.max_runtime));
  RETURN_IF_ERROR(AddSeconds(body, "checkpoint_interval_seconds", o.checkpoint_interval));
  if (!o.tolerance.empty()) body["tolerance"] = o.tolerance;
  for (const auto& dep : o.after) {  // validated when parsed: JOB[:ok|:any]
    const auto colon = dep.find(':');
    const std::int64_t id = std::stoll(dep.substr(0, colon));
    const bool any = colon != std::string::npos && dep.substr(colon + 1) == "any";
    body[any ? "after_any" : "after"].push_back(id);
  }
  RETURN_IF_ERROR(AddKeyValues(body, "labels", o.labels));
  RETURN_IF_ERROR(AddKeyValues(body, "env", o.env));
  if (!o.name.empty()) body["name"] = o.name;
  if (!o.project.empty()) body["project"] = o.project;
  if (o.max_attempts) body["max_attempts"] = *o.max_attempts;
  if (!o.after_arrays.empty()) body["after_arrays"] = o.after_arrays;
  return body;
}

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
  AddSubmit(app);
  AddWhy(app);
  AddCost(app);
  AddBudget(app);
  AddStatus(app);
  AddList(app);
  AddCancel(app);
  AddWhoami(app);
  AddAdmin(app);
  AddJobIo(app);
}

void Commands::OnParsed(CLI::App& sub, Action action) {
  sub.callback([this, &sub, action = std::move(action)] {
    action_ = action;
    chosen_ = &sub;
  });
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

void Commands::AddSubmit(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("submit", "Submit a job; prints its id and state");
  SubmitOptions& o = submit_;
  sub->add_option("--gpus", o.gpus, "GPUs the job needs in all (default 1)")
      ->check(PositiveIntegerCheck(9, "N"));
  sub->add_option("--nodes", o.nodes,
                  "Run as a multi-node gang on N nodes at once (torchrun's --nnodes)")
      ->check(PositiveIntegerCheck(2, "N"));
  sub->add_option("--gpus-per-node", o.gpus_per_node, "With --nodes: GPUs on each node")
      ->check(PositiveIntegerCheck(9, "G"));
  auto* types = sub->add_option("--gpu-type", o.gpu_types,
                                "Acceptable GPU type (repeatable or comma-separated; default any)")
                    ->allow_extra_args(false)
                    ->delimiter(',');
  sub->add_option("--min-gpu-mem", o.min_gpu_mem_gb, "Minimum memory per GPU, in GB")
      ->check(PositiveIntegerCheck(9, "GB"))
      ->excludes(types);
  sub->add_option("--priority", o.priority, "Priority class: critical, high, normal, low");
  sub->add_option("--deadline", o.deadline, "Finish by: RFC 3339 time, or +DURATION from now")
      ->check(StatusValidator(
          [](const std::string& s) { return ParseDeadline(s, Timestamp{}).status(); },
          "TIME|+DURATION"));
  sub->add_option("--estimate", o.estimate, "Expected run time (90s, 15m, 2h30m, 1d)")
      ->check(DurationCheck());
  sub->add_option("--max-runtime", o.max_runtime, "Kill the job after this long")
      ->check(DurationCheck());
  sub->add_option("--checkpoint-interval", o.checkpoint_interval, "How often the job checkpoints")
      ->check(DurationCheck());
  sub->add_option("--tolerance", o.tolerance,
                  "What an interruption costs: none, restartable (default), checkpointed")
      ->check(CLI::IsMember({"none", "restartable", "checkpointed"}));
  sub->add_option("--after", o.after,
                  "Run after JOB succeeded (JOB or JOB:ok), or ended in any way (JOB:any); "
                  "repeatable")
      ->allow_extra_args(false)
      ->check(StatusValidator(
          [](const std::string& s) {
            const auto colon = s.find(':');
            const std::string id = s.substr(0, colon), kind =
                colon == std::string::npos ? "ok" : s.substr(colon + 1);
            if (kind != "ok" && kind != "any")
              return InvalidArgument("'" + s + "': the kind after ':' must be ok or any");
            const bool digits =
                !id.empty() && id.size() <= 18 && id.find_first_not_of("0123456789") == std::string::npos;
            if (!digits || id.find_first_not_of('0') == std::string::npos)
              return InvalidArgument("'" + s + "': expected JOB, JOB:ok or JOB:any");
            return Status::Ok();
          },
          "JOB[:ok|:any]"));
  sub->add_option("--label", o.labels, "Label k=v (repeatable)")
      ->allow_extra_args(false)
      ->check(KeyValueCheck());
  sub->add_option("--env", o.env, "Environment variable K=V for the job (repeatable)")
      ->allow_extra_args(false)
      ->check(KeyValueCheck());
  sub->add_option("--name", o.name, "Job name");
  sub->add_option("--project", o.project, "Project, for cost reports");
  sub->add_option("--max-attempts", o.max_attempts, "Attempts before giving up (default 3)")
      ->check(PositiveIntegerCheck(9, "N"));
  sub->add_option("--idempotency-key", o.idempotency_key,
                  "Makes a retried submit return the first job instead of a second one");
  auto* dry_run = sub->add_flag(
      "--dry-run", o.dry_run,
      "Show where the job would run, its expected cost and finish; submit nothing");
  auto* array = sub->add_option("--array", o.array,
                                "A job array: FIRST-LAST[:STEP][%MAX_RUNNING] or N; each task "
                                "gets FRUGAL_ARRAY_ID and FRUGAL_ARRAY_INDEX")
                    ->check(StatusValidator(
                        [](const std::string& s) { return ParseArraySpec(s).status(); },
                        "SPEC"));
  sub->add_option("--after-array", o.after_arrays,
                  "Run after every task of job array ARRAY ended well (repeatable)")
      ->allow_extra_args(false)
      ->check(PositiveIntegerCheck(18, "ARRAY"));
  sub->add_option("--after-array-index", o.after_array_index,
                  "With --array: task i runs after task i of job array ARRAY succeeded")
      ->check(PositiveIntegerCheck(18, "ARRAY"))
      ->needs(array);
  auto* command = sub->add_option("COMMAND", o.command, "The program and its arguments (after --)");
  // Each line of the file is a whole job spec, so no flag that shapes one job goes with it.
  auto* file = sub->add_option("--file", o.file,
                               "Submit every job of a JSONL file (one POST /v1/jobs spec per "
                               "line), 10,000 per request, each request all or nothing");
  file->excludes(command)->excludes(dry_run)->excludes(array);
  // One of the two, or it is a usage error (exit 2) before anything is sent.
  sub->parse_complete_callback([&o] {
    if (o.command.empty() && o.file.empty())
      throw CLI::RequiredError("the job's COMMAND (after --) or --file");
  });
  for (CLI::Option* opt : sub->get_options()) {
    const std::string name = opt->get_name();
    if (opt != file && opt != command && opt != dry_run && opt != array &&
        name != "--idempotency-key" &&
        name != "--help" && name != "-h,--help")
      file->excludes(opt);
  }
  sub->footer(
      "Example:\n  frugal submit --gpus 4 --gpu-type a100 --estimate 2h --deadline +12h "
      "-- python train.py --lr 3e-4\n  frugal submit --file sweep.jsonl --idempotency-key sweep-7"
      "\n  frugal submit --array 0-99%8 -- python eval.py  # 100 tasks, 8 at a time");
  OnParsed(*sub, [this](Session& s) { return RunSubmit(s, submit_); });
}

void Commands::AddStatus(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "status", "Show a job: fields, attempts, checkpoint, events; or a job array by state");
  auto* job = sub->add_option("JOB", job_id_, "Job id")->check(PositiveIntegerCheck(18, "ID"));
  sub->add_option("--array", status_array_, "A job array: its tasks by state and its cost")
      ->check(PositiveIntegerCheck(18, "ARRAY"))
      ->excludes(job);
  sub->parse_complete_callback([this] {
    if (job_id_ == 0 && !status_array_) throw CLI::RequiredError("status: JOB or --array ARRAY");
  });
  OnParsed(*sub, [this](Session& s) {
    return status_array_ ? RunArrayStatus(s, *status_array_) : RunStatus(s, job_id_);
  });
}

void Commands::AddList(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("list", "List jobs, newest first");
  sub->add_option("--array", list_.array, "Only the tasks of this job array")
      ->check(PositiveIntegerCheck(18, "ARRAY"));
  sub->add_option("--state", list_.state, "Only jobs in this state")
      ->check(StatusValidator([](const std::string& s) { return model::ParseJobState(s).status(); },
                              "STATE"));
  sub->add_option("--team", list_.team, "Only this team's jobs");
  sub->add_option("--user", list_.user, "Only this user's jobs");
  sub->add_option("--label", list_.label, "Only jobs with this label k=v")->check(KeyValueCheck());
  sub->add_option("--limit", list_.limit, "Jobs per page, 1-500 (default 50)")
      ->check(CLI::Range(1, 500));
  sub->add_flag("--all", list_.all, "Fetch every page, not only the first");
  OnParsed(*sub, [this](Session& s) { return RunList(s, list_); });
}

void Commands::AddCancel(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("cancel", "Cancel jobs (running ones are stopped)");
  auto* ids = sub->add_option("JOB", cancel_.ids, "Job ids")->check(PositiveIntegerCheck(18, "ID"));
  auto* label = sub->add_option("--label", cancel_.label,
                                "Every unfinished job with this label k=v (e.g. a sweep)")
                    ->check(KeyValueCheck());
  ids->excludes(label);
  sub->add_option("--array", cancel_.array, "Every unfinished task of this job array")
      ->check(PositiveIntegerCheck(18, "ARRAY"))
      ->excludes(ids)
      ->excludes(label);
  sub->footer("Examples:\n  frugal cancel 41\n  frugal cancel 41 42 43\n"
              "  frugal cancel --label exp=sweep");
  // Runs inside parsing, so naming nothing is a usage error (exit 2) like any other.
  sub->parse_complete_callback([this] {
    if (cancel_.ids.empty() && cancel_.label.empty() && !cancel_.array) {
      throw CLI::RequiredError("cancel: name the jobs: JOB..., --label k=v or --array ARRAY");
    }
  });
  OnParsed(*sub, [this](Session& s) {
    return cancel_.array ? RunArrayCancel(s, *cancel_.array) : RunCancel(s, cancel_);
  });
}

void Commands::AddWhoami(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("whoami", "Show the user, team and role of the token");
  OnParsed(*sub, [](Session& s) { return RunWhoami(s); });
}

void Commands::AddAdmin(CLI::App& app) {
  CLI::App* admin = app.add_subcommand("admin", "Administration (admin token needed)");
  admin->require_subcommand(1);

  CLI::App* team = admin->add_subcommand("team", "Manage teams");
  team->require_subcommand(1);
  CLI::App* create = team->add_subcommand("create", "Create a team");
  create->add_option("NAME", team_name_, "Team name")->required();
  OnParsed(*create, [this](Session& s) { return RunTeamCreate(s, team_name_); });
  CLI::App* list = team->add_subcommand("list", "List teams");
  OnParsed(*list, [](Session& s) { return RunTeamList(s); });

  CLI::App* token = admin->add_subcommand("token", "Manage API tokens");
  token->require_subcommand(1);
  CLI::App* issue = token->add_subcommand("create", "Create a token and print it (shown once)");
  issue->add_option("--team", token_.team, "Team of the token's user")->required();
  issue->add_option("--user", token_.user, "User (or node name, for a worker)")->required();
  issue->add_option("--role", token_.role, "researcher, admin, worker or metrics (reads /metrics)")
      ->required()
      ->check(CLI::IsMember({"researcher", "admin", "worker", "metrics"}));
  OnParsed(*issue, [this](Session& s) { return RunTokenCreate(s, token_); });
  AddPool(*admin);
  AddQuota(*admin);
  AddAdminBudget(*admin);
  AddGuardrails(*admin);
  AddAdminConfig(*admin);
  AddNode(*admin);
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
