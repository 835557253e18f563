#include "scheduler/provider/preemption_source.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace frugal::provider {

RatePreemptions::RatePreemptions(double per_node_hour, std::uint64_t seed)
    : per_node_hour_(per_node_hour), rng_(seed) {}

double RatePreemptions::NextGap(int alive) {
  std::exponential_distribution<double> gap(per_node_hour_ * alive / 3600.0);
  return gap(rng_);
}

int RatePreemptions::Due(double elapsed_s, int alive) {
  if (last_s_ < 0) {
    last_s_ = elapsed_s;
    return 0;
  }
  int due = 0;
  // Memoryless: redrawing when the number of live nodes changes keeps the rate exact.
  if (alive <= 0) {
    next_s_ = -1;
  } else {
    if (next_s_ < 0) next_s_ = last_s_ + NextGap(alive);
    while (next_s_ <= elapsed_s && due < alive) {
      ++due;
      next_s_ += NextGap(alive);
    }
  }
  last_s_ = elapsed_s;
  return due;
}

namespace {

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

}  // namespace

StatusOr<TraceAvailability> TraceAvailability::Load(const std::string& path,
                                                    const std::string& zone) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open trace " + path);
  std::string line;
  if (!std::getline(in, line)) return InvalidArgument("trace " + path + " is empty");
  auto header = SplitCsv(line);
  auto col = [&](const std::string& name) {
    return static_cast<int>(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const int zc = col("zone"), ec = col("elapsed_s"), ac = col("available");
  const int n = static_cast<int>(header.size());
  if (zc == n || ec == n || ac == n)
    return InvalidArgument("trace " + path + " lacks zone, elapsed_s or available columns");
  TraceAvailability t;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    auto cells = SplitCsv(line);
    if (static_cast<int>(cells.size()) < n || cells[zc] != zone) continue;
    try {
      t.elapsed_.push_back(std::stod(cells[ec]));
      t.available_.push_back(std::stoi(cells[ac]));
    } catch (...) {
      return InvalidArgument("trace " + path + " line " + std::to_string(lineno) +
                             ": elapsed_s/available are not numbers");
    }
    if (t.available_.back() < 0)
      return InvalidArgument("trace " + path + " line " + std::to_string(lineno) +
                             ": available must be >= 0");
    t.max_count_ = std::max(t.max_count_, t.available_.back());
  }
  if (t.elapsed_.empty()) return NotFound("trace " + path + " has no rows for zone " + zone);
  const double gap = t.elapsed_.size() > 1 ? t.elapsed_[1] - t.elapsed_[0] : 1.0;
  t.span_s_ = t.elapsed_.back() + gap;
  return t;
}

int TraceAvailability::Allowed(double t_s, int nodes) const {
  double t = t_s - span_s_ * static_cast<long>(t_s / span_s_);
  // The tick in force at t: the last one at or before it.
  auto it = std::upper_bound(elapsed_.begin(), elapsed_.end(), t);
  size_t i = it == elapsed_.begin() ? 0 : static_cast<size_t>(it - elapsed_.begin()) - 1;
  return static_cast<int>(static_cast<long>(nodes) * available_[i] / max_count_);
}

}  // namespace frugal::provider
