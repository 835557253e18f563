// Minimal CSV reading for the trace files of ../shared/traces (one header line, RFC 4180
// quotes). Part of the cost simulator (bench/sim); nothing else depends on it.
#pragma once

#include <string>
#include <vector>

#include "common/status.h"

namespace frugal::sim {

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Index of a header column, or -1 when the file has no such column.
  int Col(const std::string& name) const;
};

// Reads a whole file. NotFound when it cannot be opened; rows shorter than the header are
// padded with empty cells so a missing trailing value reads as "".
StatusOr<CsvTable> ReadCsv(const std::string& path);

// One line split on commas, honouring double quotes ("a,b" is one cell, "" is a quote).
std::vector<std::string> SplitCsvLine(const std::string& line);

// The number a cell starts with ("12.3902 (a3-highgpu-8g/8)" -> 12.3902), or `fallback`
// when the cell is empty or does not start with a number.
double LeadingNumber(const std::string& cell, double fallback);

}  // namespace frugal::sim
