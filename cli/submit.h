// What `frugal submit` sends: its flags as SubmitOptions, and the JSON body of POST
// /v1/jobs built from them. Shared by plain submits (cli/submit_command.cc), job arrays
// (cli/array_commands.cc) and dry runs (cli/placement_commands.cc).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "cli/command.h"
#include "common/clock.h"
#include "common/status.h"

namespace frugal::cli {

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
  std::vector<std::string> after;   // "JOB", "JOB:ok" or "JOB:any"
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
  std::vector<std::int64_t> after_arrays;         // wait for every task of these arrays
  std::optional<std::int64_t> after_array_index;  // task i waits for task i of this array
};

// The JSON body of POST /v1/jobs for `options`: only the fields the user gave, so the
// server's defaults apply to the rest. `now` anchors a "+DURATION" deadline. Errors are
// InvalidArgument naming the flag (the validators normally catch them first).
StatusOr<nlohmann::json> BuildSubmitBody(const SubmitOptions& options, Timestamp now);

// `frugal submit --dry-run`: the quote for `body` (cli/placement_commands.cc).
Status RunDryRun(Session& s, const nlohmann::json& body);

}  // namespace frugal::cli
