#include "worker/gpu_probe.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "common/subprocess.h"

namespace frugal::worker {

namespace {

std::string Trim(const std::string& s) {
  const auto begin = s.find_first_not_of(" \t\r");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t\r") - begin + 1);
}

// nvidia-smi prints "[N/A]" or "[Not Supported]" where a board cannot say.
std::optional<int> OptionalInt(const std::string& field) {
  if (field.empty() || field.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  try {
    return std::stoi(field);
  } catch (...) {
    return std::nullopt;  // out of range
  }
}

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) out.push_back(Trim(field));
  return out;
}

}  // namespace

std::vector<std::string> NvidiaSmiCommand(const std::string& program) {
  return {program, "--query-gpu=index,name,memory.total,utilization.gpu,memory.used",
          "--format=csv,noheader,nounits"};
}

StatusOr<std::vector<GpuReading>> ParseNvidiaSmiCsv(const std::string& text) {
  std::vector<GpuReading> out;
  std::stringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (Trim(line).empty()) continue;
    const auto fields = SplitCsv(line);
    const auto index = fields.size() == 5 ? OptionalInt(fields[0]) : std::nullopt;
    const auto total = fields.size() == 5 ? OptionalInt(fields[2]) : std::nullopt;
    if (!index || !total) {
      return InvalidArgument(
          "nvidia-smi output line " + std::to_string(number) +
          " is not 'index, name, memory.total, utilization, memory.used': " + line.substr(0, 200));
    }
    out.push_back({*index, fields[1], *total, OptionalInt(fields[3]), OptionalInt(fields[4])});
  }
  return out;
}

StatusOr<std::vector<GpuReading>> ProbeGpus(const std::string& program) {
  auto run = RunSubprocess(NvidiaSmiCommand(program));
  if (!run.ok()) return NotFound("nvidia-smi is not available: " + run.status().message());
  if (run->exit_code != 0) {
    return Unavailable("nvidia-smi exited with code " + std::to_string(run->exit_code) + ": " +
                       Trim(run->output).substr(0, 300));
  }
  return ParseNvidiaSmiCsv(run->output);
}

nlohmann::json GpuStatsJson(const std::vector<GpuReading>& gpus) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& g : gpus) {
    nlohmann::json reading = {{"index", g.index}};
    if (g.utilization) reading["utilization"] = *g.utilization;
    if (g.memory_used_mb) reading["memory_used_mb"] = *g.memory_used_mb;
    out.push_back(std::move(reading));
  }
  return out;
}

nlohmann::json AttemptUsageJson(
    const nlohmann::json& gpu_stats,
    const std::vector<std::pair<std::int64_t, std::vector<int>>>& attempts) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [attempt_id, indices] : attempts) {
    std::optional<int> util, mem;
    bool known = !indices.empty();
    for (int index : indices) {
      const nlohmann::json* reading = nullptr;
      if (gpu_stats.is_array()) {
        for (const auto& g : gpu_stats) {
          if (g.is_object() && g.value("index", -1) == index) reading = &g;
        }
      }
      if (reading == nullptr || !reading->contains("utilization")) {
        known = false;
      } else {
        util = std::max(util.value_or(0), reading->at("utilization").get<int>());
      }
      if (reading != nullptr && reading->contains("memory_used_mb")) {
        mem = std::max(mem.value_or(0), reading->at("memory_used_mb").get<int>());
      }
    }
    nlohmann::json u = {{"attempt_id", attempt_id}};
    if (known && util) u["utilization"] = *util;
    if (mem) u["memory_used_mb"] = *mem;
    out.push_back(std::move(u));
  }
  return out;
}

std::string ShortGpuType(const std::string& name) {
  std::string lower;
  for (char c : name) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::stringstream words(lower);
  std::string word;
  while (words >> word) {
    if (word.find_first_of("0123456789") != std::string::npos)
      return word.substr(0, word.find('-'));
  }
  for (char& c : lower) {
    if (c == ' ') c = '-';
  }
  return lower;
}

int GpuAllocator::free_count() const {
  int n = 0;
  for (bool used : used_) n += used ? 0 : 1;
  return n;
}

std::optional<std::vector<int>> GpuAllocator::Allocate(int count) {
  if (count < 0 || count > free_count()) return std::nullopt;
  std::vector<int> out;
  for (size_t i = 0; i < used_.size() && static_cast<int>(out.size()) < count; ++i) {
    if (!used_[i]) {
      used_[i] = true;
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

void GpuAllocator::Release(const std::vector<int>& indices) {
  for (int i : indices) {
    if (i >= 0 && static_cast<size_t>(i) < used_.size()) used_[static_cast<size_t>(i)] = false;
  }
}

std::string JoinIndices(const std::vector<int>& indices) {
  std::string out;
  for (int i : indices) out += (out.empty() ? "" : ",") + std::to_string(i);
  return out;
}

}  // namespace frugal::worker
