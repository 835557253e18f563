// `frugal status`, `list` and `cancel`: one job (or a job array, cli/arrays.h), the job
// list page by page, and cancelling jobs by id, label or array.
#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <ostream>
#include <utility>

#include "cli/arrays.h"
#include "cli/command_table.h"
#include "cli/flag_checks.h"
#include "cli/format.h"
#include "scheduler/model/job.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

struct ListOptions {
  std::optional<std::int64_t> array;  // the tasks of this job array
  std::string state;
  std::string team;
  std::string user;
  std::string label;  // "k=v"
  std::optional<int> limit;
  bool all = false;
};

struct CancelOptions {
  std::optional<std::int64_t> array;  // every unfinished task of this job array
  std::vector<std::int64_t> ids;
  std::string label;  // "k=v": every unfinished job with it
};

std::string JobPath(std::int64_t id) { return "/v1/jobs/" + std::to_string(id); }

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
  return Status(StatusCode::kFailedPrecondition, std::to_string(errors.size()) + " of " +
                                                     std::to_string(ids.size()) +
                                                     " cancels failed (see above)");
}

class JobStatus final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* sub = parent.add_subcommand(
        "status", "Show a job: fields, attempts, checkpoint, events; or a job array by state");
    auto* job = sub->add_option("JOB", job_id_, "Job id")->check(PositiveIntegerCheck(18, "ID"));
    sub->add_option("--array", array_, "A job array: its tasks by state and its cost")
        ->check(PositiveIntegerCheck(18, "ARRAY"))
        ->excludes(job);
    sub->parse_complete_callback([this] {
      if (job_id_ == 0 && !array_) throw CLI::RequiredError("status: JOB or --array ARRAY");
    });
    registrar.OnParsed(*sub, [this](Session& s) {
      return array_ ? RunArrayStatus(s, *array_) : RunStatus(s, job_id_);
    });
  }

 private:
  std::int64_t job_id_ = 0;
  std::optional<std::int64_t> array_;
};

class JobList final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* sub = parent.add_subcommand("list", "List jobs, newest first");
    ListOptions& o = options_;
    sub->add_option("--array", o.array, "Only the tasks of this job array")
        ->check(PositiveIntegerCheck(18, "ARRAY"));
    sub->add_option("--state", o.state, "Only jobs in this state")
        ->check(StatusValidator(
            [](const std::string& s) { return model::ParseJobState(s).status(); }, "STATE"));
    sub->add_option("--team", o.team, "Only this team's jobs");
    sub->add_option("--user", o.user, "Only this user's jobs");
    sub->add_option("--label", o.label, "Only jobs with this label k=v")->check(KeyValueCheck());
    sub->add_option("--limit", o.limit, "Jobs per page, 1-500 (default 50)")
        ->check(CLI::Range(1, 500));
    sub->add_flag("--all", o.all, "Fetch every page, not only the first");
    registrar.OnParsed(*sub, [this](Session& s) { return RunList(s, options_); });
  }

 private:
  ListOptions options_;
};

class JobCancel final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* sub = parent.add_subcommand("cancel", "Cancel jobs (running ones are stopped)");
    CancelOptions& o = options_;
    auto* ids = sub->add_option("JOB", o.ids, "Job ids")->check(PositiveIntegerCheck(18, "ID"));
    auto* label = sub->add_option("--label", o.label,
                                  "Every unfinished job with this label k=v (e.g. a sweep)")
                      ->check(KeyValueCheck());
    ids->excludes(label);
    sub->add_option("--array", o.array, "Every unfinished task of this job array")
        ->check(PositiveIntegerCheck(18, "ARRAY"))
        ->excludes(ids)
        ->excludes(label);
    sub->footer(
        "Examples:\n  frugal cancel 41\n  frugal cancel 41 42 43\n"
        "  frugal cancel --label exp=sweep");
    // Runs inside parsing, so naming nothing is a usage error (exit 2) like any other.
    sub->parse_complete_callback([this] {
      if (options_.ids.empty() && options_.label.empty() && !options_.array) {
        throw CLI::RequiredError("cancel: name the jobs: JOB..., --label k=v or --array ARRAY");
      }
    });
    registrar.OnParsed(*sub, [this](Session& s) {
      return options_.array ? RunArrayCancel(s, *options_.array) : RunCancel(s, options_);
    });
  }

 private:
  CancelOptions options_;
};

}  // namespace

std::unique_ptr<Command> NewStatus() { return std::make_unique<JobStatus>(); }
std::unique_ptr<Command> NewList() { return std::make_unique<JobList>(); }
std::unique_ptr<Command> NewCancel() { return std::make_unique<JobCancel>(); }

}  // namespace frugal::cli
