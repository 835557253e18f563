// The job: what a researcher asked for (JobSpec) and what became of it (Job). Plain values;
// validation of untrusted input lives in api/codec, invariants again in the schema.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace frugal::model {

using JobId = std::int64_t;
using TeamId = std::int64_t;
using UserId = std::int64_t;

enum class JobState { kPending, kHeld, kRunning, kSucceeded, kFailed, kCancelled, kTimedOut };
enum class Tolerance { kNone, kRestartable, kCheckpointed };

const char* ToString(JobState s);
const char* ToString(Tolerance t);
StatusOr<JobState> ParseJobState(const std::string& s);
StatusOr<Tolerance> ParseTolerance(const std::string& s);
bool IsTerminal(JobState s);

// Default priority classes, highest first. Issue 4 makes them configurable.
const std::vector<std::string>& DefaultPriorityClasses();
// Rank of a class in DefaultPriorityClasses (0 = highest), or an error naming the choices.
StatusOr<int> PriorityRank(const std::string& cls);

struct JobSpec {
  std::string name;
  std::vector<std::string> command;  // argv; command[0] is the program
  std::map<std::string, std::string> env;
  std::string working_dir;  // empty: the worker's per-attempt directory
  int gpus = 1;   // in all: a gang of `nodes` nodes has gpus / nodes on each
  int nodes = 1;  // > 1: a multi-node gang, started on that many nodes at once or not at all
  std::vector<std::string> gpu_types;  // empty: any type (subject to min_gpu_mem_gb)
  std::optional<int> min_gpu_mem_gb;
  std::string priority = "normal";
  std::optional<Timestamp> deadline;
  std::optional<Seconds> estimate;
  std::optional<Seconds> max_runtime;
  Tolerance tolerance = Tolerance::kRestartable;
  std::optional<Seconds> checkpoint_interval;
  std::vector<JobId> after;      // dependencies: run only when these succeeded
  std::vector<JobId> after_any;  // dependencies: run when these ended, whatever the outcome
  std::map<std::string, std::string> labels;
  std::string project;
  int max_attempts = 3;
};

struct Job {
  JobId id = 0;
  JobSpec spec;
  TeamId team_id = 0;
  std::string team;
  UserId user_id = 0;
  std::string user;
  JobState state = JobState::kPending;
  std::string reason;  // last scheduling reason or hold reason
  bool cancel_requested = false;
  int attempts = 0;
  Timestamp created_at{};
  Timestamp updated_at{};
  std::optional<Timestamp> started_at;
  std::optional<Timestamp> finished_at;
  // A task of a job array (decision 0026): the array and this task's index in it.
  std::optional<std::int64_t> array_id;
  std::optional<int> array_index;
};

}  // namespace frugal::model
