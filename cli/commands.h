// The subcommands of the `frugal` CLI: their flags (registered on a CLI11 app) and what
// each one sends to the scheduler's REST API (docs/api.md) and prints. main() parses the
// command line with CLI11, then calls Commands::Run.
//
// Exit codes: 0 ok; 1 error (server errors are printed verbatim as "frugal: error: ...");
// 2 usage error. Every malformed flag value (durations, times, k=v, enums) is caught by a
// CLI11 validator during parsing, so usage errors all come out of CLI11 with its message.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
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

struct GlobalOptions {
  std::string output = "table";
  std::string url;    // empty: $FRUGAL_URL, the config file, or the default
  std::string token;  // empty: $FRUGAL_TOKEN or the config file
};

struct SubmitOptions {
  std::optional<int> gpus;           // in all (with --nodes: may be left out)
  std::optional<int> nodes;          // a multi-node gang of this many nodes
  std::optional<int> gpus_per_node;  // with --nodes: gpus = nodes x this
  std::vector<std::string> gpu_types;
  std::optional<int> min_gpu_mem_gb;
  std::string priority;
  std::string deadline;  // RFC 3339, or "+DURATION" from now
  std::string estimate;
  std::string max_runtime;
  std::string checkpoint_interval;
  std::string tolerance;
  std::vector<std::string> after;  // "JOB", "JOB:ok" or "JOB:any"
  std::vector<std::string> labels;  // "k=v"
  std::vector<std::string> env;     // "K=V"
  std::string name;
  std::string project;
  std::optional<int> max_attempts;
  std::string idempotency_key;
  std::vector<std::string> command;
  bool dry_run = false;  // print the quote; submit nothing
  std::string file;      // JSONL of job specs: submitted in batches (POST /v1/jobs:batch)
  std::string array;     // FIRST-LAST[:STEP][%MAX] or N: a job array (POST /v1/arrays)
  std::vector<std::int64_t> after_arrays;     // wait for every task of these arrays
  std::optional<std::int64_t> after_array_index;  // task i waits for task i of this array
};

// `--array` of submit: indices first..last by step, and how many may run at once.
struct ArraySpec {
  int first = 0;
  int last = 0;
  int step = 1;
  std::optional<int> max_running;
};

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

struct CheckpointOptions {
  std::int64_t step = 0;
  double progress = 0;
  std::string uri;
  std::int64_t size_bytes = 0;
};

struct PoolOptions {
  std::string name;
  std::string kind;
  std::string gpu_type;
  int gpu_mem_gb = 0;
  int max_gpus = 0;
  std::string price;  // dollars as typed; the server parses it exactly
  double speed = 1.0;
  std::string startup_delay;  // duration as typed ("90s"); empty: server default
  std::string idle_timeout;
  std::optional<double> preemption_prior;  // spot reclaims per node-hour expected
  std::optional<int> committed_gpus;       // reserved: GPUs paid for, used or not
};

// `frugal admin apply|get|audit|token revoke` (cli/admin_commands.cc).
struct AdminOptions {
  std::string file;  // apply -f
  bool dry_run = false;
  std::string kind;           // get KIND
  std::string since, action;  // audit filters
  std::optional<int> limit;
  std::int64_t token_id = 0;  // token revoke
};

struct TokenOptions {
  std::string team;
  std::string user;
  std::string role;
};

// The JSON body of POST /v1/jobs for `options`: only the fields the user gave, so the
// server's defaults apply to the rest. `now` anchors a "+DURATION" deadline. Errors are
// InvalidArgument naming the flag (the validators normally catch them first).
StatusOr<nlohmann::json> BuildSubmitBody(const SubmitOptions& options, Timestamp now);
// The response if the request went through and the server said 2xx, else the error.
StatusOr<api::ClientResponse> Checked(StatusOr<api::ClientResponse> response);
// Job arrays (cli/array_commands.cc): parsing `--array`, submitting one, and the whole
// array's status, cancel and cost.
StatusOr<ArraySpec> ParseArraySpec(const std::string& text);
Status RunSubmitArray(Session& s, const SubmitOptions& o);
Status RunArrayStatus(Session& s, std::int64_t id);
Status RunArrayCancel(Session& s, std::int64_t id);
Status RunArrayCost(Session& s, std::int64_t id);
// `frugal submit --dry-run`: the quote for `body` (cli/placement_commands.cc).
Status RunDryRun(Session& s, const nlohmann::json& body);

// Owns the parsed flag values of every subcommand and remembers which one ran.
// Construct before parsing; it must outlive the parse.
class Commands {
 public:
  // Adds the global options and all subcommands to `app`.
  explicit Commands(CLI::App& app);
  Commands(const Commands&) = delete;
  Commands& operator=(const Commands&) = delete;

  // After a successful parse: resolves the scheduler URL and token, runs the chosen
  // subcommand, prints its result or error, and returns the exit code (0 or 1).
  int Run(std::ostream& out, std::ostream& err);

 private:
  using Action = std::function<Status(Session&)>;

  void AddSubmit(CLI::App& app);
  void AddStatus(CLI::App& app);
  void AddList(CLI::App& app);
  void AddCancel(CLI::App& app);
  void AddWhoami(CLI::App& app);
  void AddAdmin(CLI::App& app);
  void AddJobIo(CLI::App& app);    // logs, checkpoint (cli/job_commands.cc)
  void AddPool(CLI::App& admin);   // admin pool (cli/pool_commands.cc)
  // admin pool history import, admin pool availability (cli/availability_commands.cc)
  void AddPoolAvailability(CLI::App& pool);
  void AddWhy(CLI::App& app);      // why (cli/placement_commands.cc)
  void AddCost(CLI::App& app);     // cost (cli/cost_commands.cc)
  void AddQuota(CLI::App& admin);  // admin quota (cli/quota_commands.cc)
  void AddAdminBudget(CLI::App& admin);  // admin budget (cli/budget_commands.cc)
  void AddBudget(CLI::App& app);          // budget [TEAM] (cli/budget_commands.cc)
  // admin guardrails get|set, admin approve (cli/guardrail_commands.cc)
  void AddGuardrails(CLI::App& admin);
  // admin apply, get, audit, token list|revoke (cli/admin_commands.cc)
  void AddAdminConfig(CLI::App& admin);
  void AddNode(CLI::App& admin);  // admin node list|drain|undrain|remove (cli/node_commands.cc)
  // Makes `action` the one Run executes when `sub` appears on the command line.
  void OnParsed(CLI::App& sub, Action action);
  // Output formats `sub` prints besides table and json (csv, yaml); -o anything else is a
  // usage error.
  void AlsoPrints(CLI::App& sub, std::vector<std::string> formats);
  // Why the chosen command cannot print global_.output, or nullopt when it can.
  std::optional<std::string> UnsupportedOutput() const;

  GlobalOptions global_;
  SubmitOptions submit_;
  ListOptions list_;
  std::int64_t job_id_ = 0;  // status
  std::optional<std::int64_t> status_array_;  // status --array
  CancelOptions cancel_;
  std::int64_t why_job_ = 0;
  std::string node_name_;  // admin node drain|undrain|remove
  struct QuotaOptions {
    std::string team;
    std::optional<int> reserved, on_demand, spot;
    std::vector<std::string> pools;  // NAME=N
  } quota_;
  struct BudgetOptions {
    std::string team;
    std::string monthly, weekly;        // dollars; exactly one
    std::vector<std::string> alert_at;  // "80%" or "80"
    bool hard = false;
    std::string webhook;
  } budget_;
  struct GuardrailOptions {
    std::string priority_class;  // --class: which class the runtime options apply to
    std::string default_runtime, max_runtime;  // durations, or "none" to clear
    std::optional<std::string> premium_types;  // comma-separated; "" turns approval off
    std::optional<int> approval_above_gpus, idle_threshold;
    std::string idle_window;
    std::string team, idle_policy;
    std::int64_t approve_job = 0;
  } guardrails_;
  struct CostOptions {
    std::string by = "team";
    std::string from, to;  // RFC 3339 or -DURATION (ago)
    std::optional<std::int64_t> array;  // one job array's cost instead of a report
  } cost_;
  AdminOptions admin_;       // admin apply, get, audit, token revoke
  std::string team_name_;    // admin team create
  TokenOptions token_;       // admin token create
  bool follow_ = false;      // logs --follow
  PoolOptions pool_;         // admin pool set
  struct HistoryOptions {
    std::string pool, file, zone, column;
  } history_;  // admin pool history import, admin pool availability (pool only)
  CheckpointOptions checkpoint_;
  Action action_;
  const CLI::App* chosen_ = nullptr;  // the subcommand whose action_ runs
  std::map<const CLI::App*, std::vector<std::string>> extra_formats_;
  // A command that needs no scheduler connection (checkpoint): runs instead of action_.
  std::function<Status(std::ostream&)> local_action_;
};

}  // namespace frugal::cli
