// The real `frugal` binary against a real scheduler: what it submits matches a raw HTTP
// submit of the same job, `status` and `list` show the server's view, and its exit codes
// and messages follow the contract (0 ok, 1 error, 2 usage error).
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <thread>

#include "tests/testing/scheduler_fixture.h"

namespace frugal::testing {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

class CliE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    sched_ = new SchedulerProcess();
    token_ = new std::string(sched_->NewToken("cli", "carla"));
  }
  static void TearDownTestSuite() {
    delete token_;
    delete sched_;
    token_ = nullptr;
    sched_ = nullptr;
  }

  // Runs `frugal args...` as carla (or with `env` as given).
  static CommandResult Frugal(const std::vector<std::string>& args) {
    return FrugalWith(sched_->CliEnv(*token_), args);
  }
  static CommandResult FrugalWith(const EnvOverrides& env, const std::vector<std::string>& args) {
    std::vector<std::string> argv = {FRUGAL_CLI_BIN};
    argv.insert(argv.end(), args.begin(), args.end());
    return RunCommand(argv, env);
  }
  static std::string Show(const CommandResult& r) {
    return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
  }

  static SchedulerProcess* sched_;
  static std::string* token_;
};
SchedulerProcess* CliE2eTest::sched_ = nullptr;
std::string* CliE2eTest::token_ = nullptr;

// The fields a job's submitter decides, or the server derives from them: everything but
// identity, name and times.
json Comparable(json job) {
  for (const char* k : {"id", "name", "created_at", "updated_at", "started_at", "finished_at"}) {
    job.erase(k);
  }
  return job;
}

TEST_F(CliE2eTest, SubmitSendsTheSameJobAsRawHttp) {
  // a. A job to depend on, so `after` is covered too.
  auto base = sched_->Call("POST", "/v1/jobs", *token_, json{{"command", {"true"}}}.dump());
  ASSERT_EQ(base.status, 201) << base.raw;
  const std::int64_t base_id = base.body["id"].get<std::int64_t>();
  // b. The same job twice: once as JSON over HTTP, once through every `frugal submit` flag.
  const json body = {{"name", "raw"},
                     {"command", {"python", "train.py", "--lr", "0.1"}},
                     {"gpus", 4},
                     {"nodes", 2},
                     {"gpu_types", {"a100", "h100"}},
                     {"priority", "high"},
                     {"deadline", "2099-01-01T00:00:00Z"},
                     {"estimate_seconds", 3600},
                     {"max_runtime_seconds", 7200},
                     {"checkpoint_interval_seconds", 600},
                     {"tolerance", "checkpointed"},
                     {"after", {base_id}},
                     {"labels", {{"exp", "sweep"}, {"run", "1"}}},
                     {"env", {{"LR", "0.1"}, {"SEED", "7"}}},
                     {"project", "vision"},
                     {"working_dir", ""},
                     {"max_attempts", 5}};
  auto raw = sched_->Call("POST", "/v1/jobs", *token_, body.dump());
  ASSERT_EQ(raw.status, 201) << raw.raw;
  const std::int64_t raw_id = raw.body["id"].get<std::int64_t>();
  auto cli = Frugal({"--output",
                     "json",
                     "submit",
                     "--name",
                     "cli",
                     "--nodes",
                     "2",
                     "--gpus-per-node",
                     "2",
                     "--gpu-type",
                     "a100,h100",
                     "--priority",
                     "high",
                     "--deadline",
                     "2099-01-01T00:00:00Z",
                     "--estimate",
                     "1h",
                     "--max-runtime",
                     "2h",
                     "--checkpoint-interval",
                     "10m",
                     "--tolerance",
                     "checkpointed",
                     "--after",
                     std::to_string(base_id),
                     "--label",
                     "exp=sweep",
                     "--label",
                     "run=1",
                     "--env",
                     "LR=0.1",
                     "--env",
                     "SEED=7",
                     "--project",
                     "vision",
                     "--max-attempts",
                     "5",
                     "--",
                     "python",
                     "train.py",
                     "--lr",
                     "0.1"});
  ASSERT_EQ(cli.exit_code, 0) << Show(cli);
  const json submitted = json::parse(cli.out, nullptr, false);
  ASSERT_TRUE(submitted.is_object()) << Show(cli);
  const std::int64_t cli_id = submitted["id"].get<std::int64_t>();
  EXPECT_EQ(submitted["state"], "pending");
  // c. `frugal list` shows both with the same fields. The engine may write a waiting reason
  // between the two submits; poll until it has settled on both.
  json listed_raw, listed_cli;
  CommandResult list;
  const auto end = Clock::now() + std::chrono::seconds(30);
  do {
    list = Frugal({"list", "--output", "json"});
    ASSERT_EQ(list.exit_code, 0) << Show(list);
    const json page = json::parse(list.out, nullptr, false);
    ASSERT_TRUE(page.is_object() && page["jobs"].is_array()) << Show(list);
    for (const auto& j : page["jobs"]) {
      if (j["id"] == raw_id) listed_raw = j;
      if (j["id"] == cli_id) listed_cli = j;
    }
    ASSERT_FALSE(listed_raw.is_null() || listed_cli.is_null()) << Show(list);
    if (Comparable(listed_raw) == Comparable(listed_cli)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (Clock::now() < end);
  EXPECT_EQ(Comparable(listed_cli).dump(2), Comparable(listed_raw).dump(2));
  EXPECT_EQ(listed_raw["name"], "raw");
  EXPECT_EQ(listed_cli["name"], "cli");
  // Spot checks, so that "equal" cannot mean "both empty".
  EXPECT_EQ(listed_cli["gpus"], 4);
  EXPECT_EQ(listed_cli["nodes"], 2);
  EXPECT_EQ(listed_cli["gpu_types"], json({"a100", "h100"}));
  EXPECT_EQ(listed_cli["deadline"], "2099-01-01T00:00:00Z");
  EXPECT_EQ(listed_cli["estimate_seconds"], 3600);
  EXPECT_EQ(listed_cli["after"], json({base_id}));
  EXPECT_EQ(listed_cli["env"], json({{"LR", "0.1"}, {"SEED", "7"}}));
  EXPECT_EQ(listed_cli["user"], "carla");
}

TEST_F(CliE2eTest, StatusShowsTheJob) {
  auto sub = Frugal(
      {"submit", "-o", "json", "--name", "looked-at", "--label", "exp=status", "--", "echo", "hi"});
  ASSERT_EQ(sub.exit_code, 0) << Show(sub);
  const json job = json::parse(sub.out, nullptr, false);
  ASSERT_TRUE(job.is_object() && job["id"].is_number_integer()) << Show(sub);
  const std::string id = std::to_string(job["id"].get<std::int64_t>());
  // a. Human output names the job, its state and its command.
  auto status = Frugal({"status", id});
  ASSERT_EQ(status.exit_code, 0) << Show(status);
  for (const std::string& want : {id, std::string("pending"), std::string("looked-at"),
                                  std::string("echo hi"), std::string("exp=status")}) {
    EXPECT_NE(status.out.find(want), std::string::npos) << "missing '" << want << "'\n"
                                                        << Show(status);
  }
  // b. JSON output is the server's job detail.
  auto as_json = Frugal({"status", id, "-o", "json"});
  ASSERT_EQ(as_json.exit_code, 0) << Show(as_json);
  const json detail = json::parse(as_json.out, nullptr, false);
  ASSERT_TRUE(detail.is_object()) << Show(as_json);
  EXPECT_EQ(std::to_string(detail["id"].get<std::int64_t>()), id);
  EXPECT_EQ(detail["state"], "pending");
  EXPECT_TRUE(detail["events"].is_array());
  // c. Cancel it; a second cancel is the server's conflict, exit 1.
  EXPECT_EQ(Frugal({"cancel", id}).exit_code, 0);
  auto again = Frugal({"cancel", id});
  EXPECT_EQ(again.exit_code, 1) << Show(again);
  EXPECT_NE(again.err.find("frugal: error:"), std::string::npos) << Show(again);
}

TEST_F(CliE2eTest, ServerSideErrorsExitOne) {
  auto missing = Frugal({"status", "999999999"});
  EXPECT_EQ(missing.exit_code, 1) << Show(missing);
  EXPECT_NE(missing.err.find("999999999"), std::string::npos) << Show(missing);
  EXPECT_NE(missing.err.find("not found"), std::string::npos) << Show(missing);
  EXPECT_TRUE(missing.out.empty()) << Show(missing);
  // A wrong token is the server's 401.
  auto wrong = FrugalWith(sched_->CliEnv("frg_not-a-real-token"), {"list"});
  EXPECT_EQ(wrong.exit_code, 1) << Show(wrong);
  EXPECT_NE(wrong.err.find("frugal: error:"), std::string::npos) << Show(wrong);
}

TEST_F(CliE2eTest, NoTokenSaysHowToConfigureOne) {
  // CliEnv("") unsets FRUGAL_TOKEN; HOME and XDG_CONFIG_HOME point at an empty temp dir.
  auto r = FrugalWith(sched_->CliEnv(""), {"list"});
  EXPECT_EQ(r.exit_code, 1) << Show(r);
  for (const char* hint : {"--token", "FRUGAL_TOKEN", "config.yaml"}) {
    EXPECT_NE(r.err.find(hint), std::string::npos) << "missing '" << hint << "'\n" << Show(r);
  }
  EXPECT_TRUE(r.out.empty()) << Show(r);
}

TEST_F(CliE2eTest, UsageErrorsExitTwo) {
  const std::vector<std::vector<std::string>> usage_errors = {
      {"list", "--bogus"},                   // unknown flag
      {"status"},                            // missing argument
      {"cancel"},                            // missing argument
      {"status", "abc"},                     // not an id
      {"submit", "--gpus", "0", "--", "x"},  // validator
      {"submit", "--gpus", "2"},             // no command
      {"list", "--limit", "501"},            // out of range
      {"list", "-o", "csv"},                 // a format list does not print
      {"status", "1", "-o", "yaml"},         // nor status
      {"cancel", "1", "--label", "a=b"},     // ids or a label, not both
      {"frobnicate"},                        // unknown subcommand
      {}};                                   // no subcommand
  const auto jobs_before = sched_->Call("GET", "/v1/jobs", *token_).body["jobs"].size();
  for (const auto& args : usage_errors) {
    auto r = Frugal(args);
    std::string shown;
    for (const auto& a : args) shown += a + " ";
    EXPECT_EQ(r.exit_code, 2) << shown << "\n" << Show(r);
    EXPECT_FALSE(r.err.empty()) << shown;
  }
  // Usage errors never reach the server: the bad submits made no job.
  EXPECT_EQ(sched_->Call("GET", "/v1/jobs", *token_).body["jobs"].size(), jobs_before);
  auto help = Frugal({"--help"});
  EXPECT_EQ(help.exit_code, 0) << Show(help);
}

// Bulk cancel (issue 17): several ids at once, or every unfinished job with a label; a
// failure on one id does not stop the others and makes the command exit 1.
TEST_F(CliE2eTest, CancelsSeveralJobsByIdOrLabel) {
  auto submit = [](const std::string& label) {
    auto r = Frugal({"submit", "-o", "json", "--label", label, "--", "sleep", "1"});
    EXPECT_EQ(r.exit_code, 0) << Show(r);
    return std::to_string(json::parse(r.out, nullptr, false).value("id", std::int64_t{0}));
  };
  auto state_of = [](const std::string& id) {
    return sched_->Call("GET", "/v1/jobs/" + id, *token_).body.value("state", "");
  };
  const std::string a = submit("exp=bulk-ids"), b = submit("exp=bulk-ids");
  auto both = Frugal({"cancel", a, b});
  EXPECT_EQ(both.exit_code, 0) << Show(both);
  EXPECT_EQ(state_of(a), "cancelled");
  EXPECT_EQ(state_of(b), "cancelled");
  // An id that is already cancelled fails alone; the fresh one is still cancelled.
  const std::string c = submit("exp=bulk-ids");
  auto mixed = Frugal({"cancel", a, c});
  EXPECT_EQ(mixed.exit_code, 1) << Show(mixed);
  EXPECT_NE(mixed.out.find("Job " + a + ":"), std::string::npos) << Show(mixed);
  EXPECT_NE(mixed.err.find("1 of 2 cancels failed"), std::string::npos) << Show(mixed);
  EXPECT_EQ(state_of(c), "cancelled");

  std::vector<std::string> sweep;
  for (int i = 0; i < 3; ++i) sweep.push_back(submit("exp=bulk-sweep"));
  const std::string other = submit("exp=bulk-other");
  auto by_label = Frugal({"cancel", "--label", "exp=bulk-sweep", "-o", "json"});
  ASSERT_EQ(by_label.exit_code, 0) << Show(by_label);
  const json out = json::parse(by_label.out, nullptr, false);
  EXPECT_EQ(out["jobs"].size(), 3u) << Show(by_label);
  EXPECT_TRUE(out["errors"].empty()) << Show(by_label);
  for (const auto& id : sweep) EXPECT_EQ(state_of(id), "cancelled") << id;
  EXPECT_EQ(state_of(other), "pending") << "a job without the label is left alone";
  // Run again, nothing is left to cancel: not an error.
  auto again = Frugal({"cancel", "--label", "exp=bulk-sweep"});
  EXPECT_EQ(again.exit_code, 0) << Show(again);
  EXPECT_NE(again.out.find("No unfinished job"), std::string::npos) << Show(again);
  EXPECT_EQ(Frugal({"cancel", other}).exit_code, 0);
}

// `-o` names only formats the command prints (issue 17): csv for cost reports, yaml for
// the admin documents; anything else is a usage error before a request is sent.
TEST_F(CliE2eTest, OutputFormatsAreCheckedPerCommand) {
  auto cost_csv = Frugal({"cost", "-o", "csv"});
  EXPECT_NE(cost_csv.exit_code, 2) << Show(cost_csv);
  auto list_yaml = Frugal({"list", "-o", "yaml"});
  EXPECT_EQ(list_yaml.exit_code, 2) << Show(list_yaml);
  EXPECT_NE(list_yaml.err.find("-o yaml is not supported by 'frugal list'"), std::string::npos)
      << Show(list_yaml);
  EXPECT_NE(list_yaml.err.find("table, json"), std::string::npos) << Show(list_yaml);
  auto admin_yaml =
      FrugalWith(sched_->CliEnv(sched_->admin_token()), {"admin", "get", "pools", "-o", "yaml"});
  EXPECT_EQ(admin_yaml.exit_code, 0) << Show(admin_yaml);
}

}  // namespace
}  // namespace frugal::testing
