// Human-readable output of the `frugal` CLI: aligned tables, key/value blocks and relative
// times, rendered from the server's JSON. Pure functions of their inputs (`now` is passed
// in); they never throw on odd JSON: a missing or mistyped field shows as "-".
// (`--output json` bypasses all of this and prints the server's JSON via PrettyJson.)
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace frugal::cli {

using nlohmann::json;

// Columns left-aligned, two spaces apart, widths from the widest cell (in code points).
// Control characters in cells become spaces, so a job name cannot garble the terminal.
class Table {
 public:
  explicit Table(std::vector<std::string> headers);
  // Missing cells are blank; extra cells are dropped.
  void AddRow(std::vector<std::string> cells);
  bool empty() const { return rows_.empty(); }
  // Header line plus one line per row, each ending in '\n', with trailing spaces trimmed.
  std::string Render() const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "Label:  value" lines with the values aligned; empty values show as "-".
std::string RenderKeyValues(const std::vector<std::pair<std::string, std::string>>& pairs);

// At most `max_width` code points; a cut string ends in "…".
std::string Truncate(const std::string& text, std::size_t max_width);

// "just now", "45s ago", "3m ago", "2h5m ago", "4d3h ago", "40d ago";
// "in 2h" for future times.
std::string FormatRelative(Timestamp t, Timestamp now);

// An RFC 3339 JSON string as "2026-11-22T18:16:10Z (3m ago)"; null or missing as "-";
// a string that does not parse is shown as it is.
std::string FormatTimeWithAge(const json& value, Timestamp now);
// Only the relative part ("3m ago"), for narrow table columns.
std::string FormatAge(const json& value, Timestamp now);

// object[key], or null when `object` is not an object or has no such key. Never throws.
const json& Field(const json& object, const char* key);

// The value as text: strings as they are, numbers and booleans as JSON, null as "".
std::string Text(const json& object, const char* key);

// argv joined by spaces, quoting arguments the shell would split or expand.
std::string ShellJoin(const json& argv);

// 2-space indented JSON and a newline; invalid UTF-8 is replaced rather than thrown on.
std::string PrettyJson(const json& value);

// The `frugal list` table from an array of jobs (newest first, as the server sends them).
std::string RenderJobList(const json& jobs, Timestamp now);

// The `frugal status` view of one job detail (job, attempt_history, latest_checkpoint,
// events).
std::string RenderJobDetail(const json& detail, Timestamp now);

// The `frugal admin team list` table.
std::string RenderTeams(const json& teams);

}  // namespace frugal::cli
