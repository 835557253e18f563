#include "bench/sim/csv.h"

#include <cstdlib>
#include <fstream>

namespace frugal::sim {

int CsvTable::Col(const std::string& name) const {
  for (size_t i = 0; i < header.size(); ++i)
    if (header[i] == name) return static_cast<int>(i);
  return -1;
}

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cells.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        cells.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      cells.emplace_back();
    } else if (c != '\r') {
      cells.back() += c;
    }
  }
  return cells;
}

StatusOr<CsvTable> ReadCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound("cannot open " + path);
  CsvTable t;
  std::string line;
  if (!std::getline(in, line)) return InvalidArgument(path + " is empty");
  t.header = SplitCsvLine(line);
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    auto cells = SplitCsvLine(line);
    if (cells.size() < t.header.size()) cells.resize(t.header.size());
    t.rows.push_back(std::move(cells));
  }
  return t;
}

double LeadingNumber(const std::string& cell, double fallback) {
  const char* begin = cell.c_str();
  while (*begin == ' ') ++begin;
  char* end = nullptr;
  double v = std::strtod(begin, &end);
  return end == begin ? fallback : v;
}

}  // namespace frugal::sim
