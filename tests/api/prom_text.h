// A strict parser of the Prometheus text exposition format (0.0.4) for tests: it refuses
// what a lenient scraper would let through (a sample before its TYPE, a family split in two,
// a duplicate series, bad escapes, a histogram whose buckets go down or whose +Inf bucket is
// not its _count), so a test that parses GET /metrics proves the output is well formed.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::testing {

using PromLabels = std::map<std::string, std::string>;

struct PromSample {
  std::string name;  // as written: a histogram's samples end in _bucket, _sum or _count
  PromLabels labels;
  double value = 0;
};

struct PromFamily {
  std::string name, help, type;  // type: counter, gauge, histogram, summary or untyped
  std::vector<PromSample> samples;
};

struct PromExposition {
  std::map<std::string, PromFamily> families;

  bool Has(const std::string& family) const { return families.count(family) > 0; }
  // Sum of the values of samples named `sample` whose labels include all of `match`.
  double Sum(const std::string& sample, const PromLabels& match = {}) const;
  // How many samples named `sample` match.
  int Count(const std::string& sample, const PromLabels& match = {}) const;
};

// Parses `text`, or InvalidArgument naming the line and what is wrong with it.
StatusOr<PromExposition> ParsePromText(const std::string& text);

}  // namespace frugal::testing
