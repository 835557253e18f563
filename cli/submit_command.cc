// `frugal submit`: one job, a JSONL file of jobs (--file), a job array (--array) or a quote
// of where a job would go (--dry-run).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <utility>

#include "cli/arrays.h"
#include "cli/command_table.h"
#include "cli/flag_checks.h"
#include "cli/format.h"
#include "cli/submit.h"
#include "common/money.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

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
      return Status(st.code(),
                    st.message() + " (the jobs of lines " + std::to_string(lines[0]) + " to " +
                        std::to_string(lines[first - 1]) + " were submitted; none after)",
                    st.field());
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

// --after JOB[:ok|:any]: the id is checked as PositiveIntegerCheck(18) would.
CLI::Validator AfterCheck() {
  return StatusValidator(
      [](const std::string& s) {
        const auto colon = s.find(':');
        const std::string id = s.substr(0, colon),
                          kind = colon == std::string::npos ? "ok" : s.substr(colon + 1);
        if (kind != "ok" && kind != "any")
          return InvalidArgument("'" + s + "': the kind after ':' must be ok or any");
        const bool digits = !id.empty() && id.size() <= 18 &&
                            id.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || id.find_first_not_of('0') == std::string::npos)
          return InvalidArgument("'" + s + "': expected JOB, JOB:ok or JOB:any");
        return Status::Ok();
      },
      "JOB[:ok|:any]");
}

// The flags that shape one job's spec (BuildSubmitBody), in the order --help lists them.
void AddJobFlags(CLI::App& sub, SubmitOptions& o) {
  sub.add_option("--gpus", o.gpus, "GPUs the job needs in all (default 1)")
      ->check(PositiveIntegerCheck(9, "N"));
  sub.add_option("--nodes", o.nodes,
                 "Run as a multi-node gang on N nodes at once (torchrun's --nnodes)")
      ->check(PositiveIntegerCheck(2, "N"));
  sub.add_option("--gpus-per-node", o.gpus_per_node, "With --nodes: GPUs on each node")
      ->check(PositiveIntegerCheck(9, "G"));
  auto* types = sub.add_option("--gpu-type", o.gpu_types,
                               "Acceptable GPU type (repeatable or comma-separated; default any)")
                    ->allow_extra_args(false)
                    ->delimiter(',');
  sub.add_option("--min-gpu-mem", o.min_gpu_mem_gb, "Minimum memory per GPU, in GB")
      ->check(PositiveIntegerCheck(9, "GB"))
      ->excludes(types);
  sub.add_option("--priority", o.priority, "Priority class: critical, high, normal, low");
  sub.add_option("--deadline", o.deadline, "Finish by: RFC 3339 time, or +DURATION from now")
      ->check(StatusValidator(
          [](const std::string& s) { return ParseDeadline(s, Timestamp{}).status(); },
          "TIME|+DURATION"));
  sub.add_option("--estimate", o.estimate, "Expected run time (90s, 15m, 2h30m, 1d)")
      ->check(DurationCheck());
  sub.add_option("--max-runtime", o.max_runtime, "Kill the job after this long")
      ->check(DurationCheck());
  sub.add_option("--checkpoint-interval", o.checkpoint_interval, "How often the job checkpoints")
      ->check(DurationCheck());
  sub.add_option("--tolerance", o.tolerance,
                 "What an interruption costs: none, restartable (default), checkpointed")
      ->check(CLI::IsMember({"none", "restartable", "checkpointed"}));
  sub.add_option("--after", o.after,
                 "Run after JOB succeeded (JOB or JOB:ok), or ended in any way (JOB:any); "
                 "repeatable")
      ->allow_extra_args(false)
      ->check(AfterCheck());
  sub.add_option("--label", o.labels, "Label k=v (repeatable)")
      ->allow_extra_args(false)
      ->check(KeyValueCheck());
  sub.add_option("--env", o.env, "Environment variable K=V for the job (repeatable)")
      ->allow_extra_args(false)
      ->check(KeyValueCheck());
  sub.add_option("--name", o.name, "Job name");
  sub.add_option("--project", o.project, "Project, for cost reports");
  sub.add_option("--max-attempts", o.max_attempts, "Attempts before giving up (default 3)")
      ->check(PositiveIntegerCheck(9, "N"));
}

class Submit final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override;

 private:
  SubmitOptions options_;
};

void Submit::Register(CLI::App& parent, Registrar& registrar) {
  CLI::App* sub = parent.add_subcommand("submit", "Submit a job; prints its id and state");
  SubmitOptions& o = options_;
  AddJobFlags(*sub, o);
  sub->add_option("--idempotency-key", o.idempotency_key,
                  "Makes a retried submit return the first job instead of a second one");
  auto* dry_run =
      sub->add_flag("--dry-run", o.dry_run,
                    "Show where the job would run, its expected cost and finish; submit nothing");
  auto* array = sub->add_option("--array", o.array,
                                "A job array: FIRST-LAST[:STEP][%MAX_RUNNING] or N; each task "
                                "gets FRUGAL_ARRAY_ID and FRUGAL_ARRAY_INDEX")
                    ->check(StatusValidator(
                        [](const std::string& s) { return ParseArraySpec(s).status(); }, "SPEC"));
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
        name != "--idempotency-key" && name != "--help" && name != "-h,--help")
      file->excludes(opt);
  }
  sub->footer(
      "Example:\n  frugal submit --gpus 4 --gpu-type a100 --estimate 2h --deadline +12h "
      "-- python train.py --lr 3e-4\n  frugal submit --file sweep.jsonl --idempotency-key sweep-7"
      "\n  frugal submit --array 0-99%8 -- python eval.py  # 100 tasks, 8 at a time");
  registrar.OnParsed(*sub, [this](Session& s) { return RunSubmit(s, options_); });
}

}  // namespace

std::unique_ptr<Command> NewSubmit() { return std::make_unique<Submit>(); }

}  // namespace frugal::cli
