// Metrics in the Prometheus text exposition format (version 0.0.4): counters, gauges and
// histograms with fixed buckets, kept per label set, and a renderer. The API serves them at
// GET /metrics (api/routes_metrics.cc) together with figures it reads from the database.
//
// Threading: a Registry and its families are thread-safe; HTTP handler threads and the
// engine thread update them concurrently. Naming is the caller's job and follows the
// Prometheus conventions: `frugal_..._total` for counters, base units (`_seconds`,
// `_dollars`) in the name.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::metrics {

enum class Type { kCounter, kGauge, kHistogram };

using LabelValues = std::vector<std::string>;

// One metric name: its help text, label names and a value per label set. Calls with the
// wrong number of label values, a negative counter increment or the wrong operation for
// the type are programmer errors: they assert in debug builds and are dropped otherwise
// (a metric must never take the process down).
class Family {
 public:
  Family(std::string name, std::string help, Type type, std::vector<std::string> label_names,
         std::vector<double> bounds);

  void Inc(const LabelValues& values = {}, double by = 1);  // counter or gauge
  void Set(const LabelValues& values, double value);        // gauge only
  void Observe(const LabelValues& values, double value);    // histogram only

  // Appends this family's HELP, TYPE and sample lines. Families without labels show 0
  // before their first update; labelled ones show only the label sets seen so far.
  void Render(std::string& out) const;

  const std::string& name() const { return name_; }
  Type type() const { return type_; }

 private:
  struct Cell {
    double value = 0;               // counter / gauge
    std::vector<double> buckets;    // histogram: per bound, not cumulative
    double sum = 0;
    std::uint64_t count = 0;
  };
  bool Accepts(const LabelValues& values, Type op) const;
  Cell& CellFor(const LabelValues& values);  // mu_ held

  const std::string name_;
  const std::string help_;
  const Type type_;
  const std::vector<std::string> label_names_;
  const std::vector<double> bounds_;  // histogram upper bounds, ascending, +Inf implied

  mutable std::mutex mu_;
  std::map<LabelValues, Cell> cells_;  // guarded by mu_
};

// Families by name. Adding a name twice returns the first family (so instruments may be
// looked up where they are used); it must be added with the same type and labels.
class Registry {
 public:
  Family& Counter(const std::string& name, const std::string& help,
                  std::vector<std::string> label_names = {});
  Family& Gauge(const std::string& name, const std::string& help,
                std::vector<std::string> label_names = {});
  // `bounds`: ascending finite upper bounds; the +Inf bucket is added by the renderer.
  Family& Histogram(const std::string& name, const std::string& help,
                    std::vector<std::string> label_names, std::vector<double> bounds);

  // Every family, sorted by name, in the text format.
  std::string Render() const;

 private:
  Family& Add(const std::string& name, const std::string& help, Type type,
              std::vector<std::string> label_names, std::vector<double> bounds);

  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Family>> families_;  // guarded by mu_; never erased
};

// The process-wide registry for instruments observed deep inside the engine and the HTTP
// server (cycle durations, request latencies), like the default registry of every
// Prometheus client: their owners' constructors need not carry it. Figures read from the
// database at scrape time use a Registry of their own.
Registry& Default();

// frugal_database_errors_total{source} in `registry`.
Family& DatabaseErrors(Registry& registry = Default());
// Counts a failed store call in frugal_database_errors_total{source} if `status` is a
// database error (unavailable or internal); other statuses are the caller's business.
void CountDatabaseError(const Status& status, const char* source, Registry& registry = Default());

// Fixed buckets, in seconds: 0.5 ms .. 10 s.
const std::vector<double>& LatencyBuckets();

// A number as the text format writes it: shortest round-trip form, "+Inf", "-Inf", "NaN".
std::string FormatValue(double v);
// `s` escaped for a label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& s);

// Seconds elapsed since construction, on the monotonic clock. Durations for metrics only:
// nothing is decided by them, so they do not go through the injected Clock.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_;
};

}  // namespace frugal::metrics
