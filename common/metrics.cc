#include "common/metrics.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace frugal::metrics {

namespace {

const char* TypeName(Type t) {
  switch (t) {
    case Type::kCounter: return "counter";
    case Type::kGauge: return "gauge";
    case Type::kHistogram: return "histogram";
  }
  return "untyped";
}

[[maybe_unused]] bool ValidName(const std::string& s, bool allow_colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (allow_colon && c == ':') || (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

// HELP text escapes only backslash and newline (the format's rule, unlike label values).
std::string EscapeHelp(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void AppendLabels(std::string& out, const std::vector<std::string>& names,
                  const LabelValues& values, const std::string& extra_name = "",
                  const std::string& extra_value = "") {
  if (names.empty() && extra_name.empty()) return;
  out += '{';
  bool first = true;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!first) out += ',';
    first = false;
    out += names[i] + "=\"" + EscapeLabelValue(values[i]) + '"';
  }
  if (!extra_name.empty()) {
    if (!first) out += ',';
    out += extra_name + "=\"" + extra_value + '"';
  }
  out += '}';
}

}  // namespace

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : "NaN";
}

std::string EscapeLabelValue(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

Family::Family(std::string name, std::string help, Type type,
               std::vector<std::string> label_names, std::vector<double> bounds)
    : name_(std::move(name)), help_(std::move(help)), type_(type),
      label_names_(std::move(label_names)), bounds_(std::move(bounds)) {}

bool Family::Accepts(const LabelValues& values, Type op) const {
  const bool ok = values.size() == label_names_.size() &&
                  (op == type_ || (op == Type::kCounter && type_ == Type::kGauge));
  assert(ok && "metric used with the wrong labels or operation");
  return ok;
}

Family::Cell& Family::CellFor(const LabelValues& values) {
  auto [it, inserted] = cells_.try_emplace(values);
  if (inserted && type_ == Type::kHistogram) it->second.buckets.assign(bounds_.size(), 0);
  return it->second;
}

void Family::Inc(const LabelValues& values, double by) {
  // A counter only goes up; a gauge may be moved either way.
  if (!Accepts(values, Type::kCounter) || (type_ == Type::kCounter && !(by >= 0))) return;
  std::lock_guard<std::mutex> lock(mu_);
  CellFor(values).value += by;
}

void Family::Set(const LabelValues& values, double value) {
  if (!Accepts(values, Type::kGauge)) return;
  std::lock_guard<std::mutex> lock(mu_);
  CellFor(values).value = value;
}

void Family::Observe(const LabelValues& values, double value) {
  if (!Accepts(values, Type::kHistogram) || std::isnan(value)) return;
  std::lock_guard<std::mutex> lock(mu_);
  Cell& c = CellFor(values);
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (value <= bounds_[i]) {
      ++c.buckets[i];
      break;
    }
  }
  c.sum += value;
  ++c.count;
}

void Family::Render(std::string& out) const {
  out += "# HELP " + name_ + " " + EscapeHelp(help_) + "\n";
  out += "# TYPE " + name_ + " " + TypeName(type_) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  std::map<LabelValues, Cell> cells = cells_;
  if (cells.empty() && label_names_.empty()) {
    cells.try_emplace(LabelValues{}).first->second.buckets.assign(bounds_.size(), 0);
  }
  for (const auto& [values, c] : cells) {
    if (type_ != Type::kHistogram) {
      out += name_;
      AppendLabels(out, label_names_, values);
      out += " " + FormatValue(c.value) + "\n";
      continue;
    }
    std::uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += i < bounds_.size() ? c.buckets[i] : 0;
      const std::uint64_t shown = i < bounds_.size() ? cumulative : c.count;
      out += name_ + "_bucket";
      AppendLabels(out, label_names_, values, "le",
                   i < bounds_.size() ? FormatValue(bounds_[i]) : "+Inf");
      out += " " + std::to_string(shown) + "\n";
    }
    out += name_ + "_sum";
    AppendLabels(out, label_names_, values);
    out += " " + FormatValue(c.sum) + "\n";
    out += name_ + "_count";
    AppendLabels(out, label_names_, values);
    out += " " + std::to_string(c.count) + "\n";
  }
}

Family& Registry::Counter(const std::string& name, const std::string& help,
                          std::vector<std::string> label_names) {
  return Add(name, help, Type::kCounter, std::move(label_names), {});
}

Family& Registry::Gauge(const std::string& name, const std::string& help,
                        std::vector<std::string> label_names) {
  return Add(name, help, Type::kGauge, std::move(label_names), {});
}

Family& Registry::Histogram(const std::string& name, const std::string& help,
                            std::vector<std::string> label_names, std::vector<double> bounds) {
  return Add(name, help, Type::kHistogram, std::move(label_names), std::move(bounds));
}

Family& Registry::Add(const std::string& name, const std::string& help, Type type,
                      std::vector<std::string> label_names, std::vector<double> bounds) {
  assert(ValidName(name, true));
  for ([[maybe_unused]] const auto& l : label_names) {
    assert(ValidName(l, false) && l.rfind("__", 0) != 0);
    assert(!(type == Type::kHistogram && l == "le"));
  }
  for ([[maybe_unused]] size_t i = 1; i < bounds.size(); ++i) assert(bounds[i - 1] < bounds[i]);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = families_.find(name);
  if (it != families_.end()) {
    assert(it->second->type() == type);
    return *it->second;
  }
  auto family = std::make_unique<Family>(name, help, type, std::move(label_names),
                                         std::move(bounds));
  return *families_.emplace(name, std::move(family)).first->second;
}

std::string Registry::Render() const {
  std::string out;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, family] : families_) family->Render(out);
  return out;
}

Registry& Default() {
  static Registry* registry = new Registry();  // never destroyed: used until exit
  return *registry;
}

Family& DatabaseErrors(Registry& registry) {
  return registry.Counter("frugal_database_errors_total",
                          "Store calls that failed with a database error (unavailable or "
                          "internal), by the part of the scheduler that made them (api, "
                          "metrics, engine).",
                          {"source"});
}

void CountDatabaseError(const Status& status, const char* source, Registry& registry) {
  if (status.code() != StatusCode::kUnavailable && status.code() != StatusCode::kInternal) return;
  DatabaseErrors(registry).Inc({source});
}

const std::vector<double>& LatencyBuckets() {
  static const std::vector<double> kBuckets = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                               0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return kBuckets;
}

}  // namespace frugal::metrics
