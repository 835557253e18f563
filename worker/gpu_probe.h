// This node's GPUs: what nvidia-smi says they are and how busy they are, and which indices
// the agent has handed to running attempts (CUDA_VISIBLE_DEVICES).
//
// Threading: ProbeGpus runs a child process and may be called from any thread;
// GpuAllocator is a plain value, owned by the agent's single thread.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace frugal::worker {

struct GpuReading {
  int index = 0;
  std::string name;  // e.g. "NVIDIA A100-SXM4-80GB"
  int memory_total_mb = 0;
  std::optional<int> utilization;  // percent; nvidia-smi says [N/A] on some boards
  std::optional<int> memory_used_mb;
};

// The query the worker runs, as argv. `program` is the worker's nvidia_smi setting (a
// name on PATH or a path; tests point it at a script printing the same CSV).
std::vector<std::string> NvidiaSmiCommand(const std::string& program = "nvidia-smi");

// Parses the CSV (noheader, nounits) output of NvidiaSmiCommand(). InvalidArgument naming the
// line when a line does not have its five fields.
StatusOr<std::vector<GpuReading>> ParseNvidiaSmiCsv(const std::string& text);

// Runs nvidia-smi. NotFound when it is not installed (a node without NVIDIA GPUs, or a
// demo node with pretend GPUs); Unavailable when it runs but fails.
StatusOr<std::vector<GpuReading>> ProbeGpus(const std::string& program = "nvidia-smi");

// The heartbeat's `gpus` array: [{"index", "utilization", "memory_used_mb"}, ...].
nlohmann::json GpuStatsJson(const std::vector<GpuReading>& gpus);

// The heartbeat's `usage` array from its `gpus` array and each running attempt's GPU
// indices: [{"attempt_id", "utilization", "memory_used_mb"}], utilization being the busiest
// of the attempt's GPUs and left out (unknown) when any of them has no reading, memory the
// largest known. The scheduler's idle guardrail never counts unknown as idle.
nlohmann::json AttemptUsageJson(
    const nlohmann::json& gpu_stats,
    const std::vector<std::pair<std::int64_t, std::vector<int>>>& attempts);

// A pool-style GPU type from a board name: the first word holding a digit, lower-cased, up
// to its first '-' ("NVIDIA A100-SXM4-80GB" -> "a100", "NVIDIA L4" -> "l4"). Pools name their
// type themselves, so an explicit gpu_type setting always wins over this guess.
std::string ShortGpuType(const std::string& name);

// Which of the node's GPU indices are free. Hands out the lowest free indices first, so
// a node's allocation is predictable in logs and tests.
class GpuAllocator {
 public:
  explicit GpuAllocator(int gpus) : used_(static_cast<size_t>(gpus > 0 ? gpus : 0), false) {}

  int total() const { return static_cast<int>(used_.size()); }
  int free_count() const;
  // The `count` lowest free indices, now taken; nullopt (and nothing taken) if fewer are free.
  std::optional<std::vector<int>> Allocate(int count);
  // Frees `indices`; unknown or already free ones are ignored.
  void Release(const std::vector<int>& indices);

 private:
  std::vector<bool> used_;
};

// "0,1,3": the CUDA_VISIBLE_DEVICES value for `indices`.
std::string JoinIndices(const std::vector<int>& indices);

}  // namespace frugal::worker
