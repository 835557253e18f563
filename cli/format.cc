#include "cli/format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

namespace frugal::cli {

namespace {

constexpr std::size_t kNameWidth = 24;
constexpr std::size_t kReasonWidth = 48;

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

std::size_t DisplayWidth(const std::string& s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return !IsContinuationByte(c); }));
}

std::string Sanitize(std::string s) {
  for (auto& c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) c = ' ';
  }
  return s;
}

std::string OrDash(std::string s) { return s.empty() ? "-" : s; }

// Joins the elements of a JSON array (of anything) with `sep`.
std::string JoinArray(const json& array, const char* sep) {
  if (!array.is_array()) return "";
  std::string out;
  for (const auto& item : array) {
    if (!out.empty()) out += sep;
    out += item.is_string() ? item.get<std::string>() : item.dump();
  }
  return out;
}

// `{"a":"1","b":"2"}` as "a=1, b=2", or only the keys when values may be secrets.
std::string JoinObject(const json& object, bool keys_only) {
  if (!object.is_object()) return "";
  std::string out;
  for (const auto& [key, value] : object.items()) {
    if (!out.empty()) out += ", ";
    out += key;
    if (keys_only) continue;
    out += '=';  // appended piecewise: GCC 12 warns (-Wrestrict) on "literal" + string
    out += value.is_string() ? value.get<std::string>() : value.dump();
  }
  return out;
}

std::string DurationText(const json& value) {
  if (!value.is_number_integer()) return "";
  return FormatDuration(frugal::Seconds(value.get<std::int64_t>()));
}

std::string Bytes(const json& value) {
  if (!value.is_number()) return "";
  double n = value.get<double>();
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (n >= 1024 && unit < 4) {
    n /= 1024;
    ++unit;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, unit == 0 ? "%.0f %s" : "%.1f %s", n, kUnits[unit]);
  return buf;
}

std::string StateText(const json& job) {
  std::string state = Text(job, "state");
  if (Field(job, "cancel_requested") == true) state += " (cancel requested)";
  return state;
}

std::string GpuText(const json& job) {
  std::string out = Text(job, "gpus") + " GPU";
  if (Text(job, "gpus") != "1") out += "s";
  // A multi-node gang: its nodes and each one's share.
  if (Field(job, "nodes").is_number_integer() && Field(job, "nodes").get<int>() > 1) {
    const int nodes = Field(job, "nodes").get<int>();
    out += " on " + std::to_string(nodes) + " nodes (" +
           std::to_string(Field(job, "gpus").get<int>() / nodes) + " each)";
  }
  const std::string types = JoinArray(Field(job, "gpu_types"), "|");
  const std::string mem = Text(job, "min_gpu_mem_gb");
  if (!types.empty()) out += ", type " + types;
  if (!mem.empty()) out += ", at least " + mem + " GB each";
  if (types.empty() && mem.empty()) out += ", any type";
  return out;
}

std::string ToleranceText(const json& job) {
  std::string out = Text(job, "tolerance");
  const std::string every = DurationText(Field(job, "checkpoint_interval_seconds"));
  if (!every.empty()) out += ", checkpoint every " + every;
  return out;
}

std::string RenderAttempts(const json& attempts) {
  Table t({"#", "NODE", "POOL", "GPUS", "STARTED", "ENDED", "END REASON", "EXIT"});
  if (attempts.is_array()) {
    std::map<std::string, int> parts;  // rows per attempt number: > 1 for a gang
    for (const auto& a : attempts) ++parts[Text(a, "number")];
    for (const auto& a : attempts) {
      // The stop order behind an ending, e.g. "preempted (idle_reclaim)".
      std::string end = Text(a, "end_reason");
      if (!end.empty() && !Text(a, "stop_kind").empty()) end += " (" + Text(a, "stop_kind") + ")";
      // A gang's parts share the number: "2.1" is rank 1 of attempt 2.
      std::string number = Text(a, "number");
      if (parts[number] > 1) number += "." + Text(a, "rank");
      t.AddRow({number, Text(a, "node"), Text(a, "pool"), Text(a, "gpus"),
                OrDash(Text(a, "started_at")), OrDash(Text(a, "ended_at")), OrDash(end),
                OrDash(Text(a, "exit_code"))});
    }
  }
  return t.empty() ? "(none)\n" : t.Render();
}

// `attempts` is the job's attempt_history: the checkpoint names its attempt by the "#" the
// attempt table shows (1, 2, ...), not by the attempt's global id.
std::string RenderCheckpoint(const json& c, const json& attempts, Timestamp now) {
  if (!c.is_object()) return "  (none)\n";
  std::string line = "  step " + Text(c, "step");
  if (Field(c, "progress").is_number()) {
    char pct[16];
    std::snprintf(pct, sizeof pct, " (%.0f%%)", Field(c, "progress").get<double>() * 100);
    line += pct;
  }
  line += ", " + Text(c, "uri");
  const std::string size = Bytes(Field(c, "size_bytes"));
  if (!size.empty()) line += ", " + size;
  line += ", " + FormatAge(Field(c, "created_at"), now);
  std::string attempt = "id " + Text(c, "attempt_id");
  if (attempts.is_array()) {
    for (const auto& a : attempts) {
      if (Field(a, "id") == Field(c, "attempt_id")) attempt = "#" + Text(a, "number");
    }
  }
  line += " (attempt " + attempt + ")";
  return Sanitize(line) + "\n";
}

std::string RenderEvents(const json& events) {
  Table t({"AT", "KIND", "CHANGE", "MESSAGE"});
  if (events.is_array()) {
    for (const auto& e : events) {
      std::string change;
      if (!Text(e, "from").empty() || !Text(e, "to").empty()) {
        change = OrDash(Text(e, "from")) + " -> " + OrDash(Text(e, "to"));
      }
      t.AddRow({Text(e, "at"), Text(e, "kind"), change, Text(e, "message")});
    }
  }
  return t.empty() ? "(none)\n" : t.Render();
}

// Indents every line of a rendered block by two spaces.
std::string Indent(const std::string& block) {
  std::string out;
  bool at_line_start = true;
  for (char c : block) {
    if (at_line_start && c != '\n') out += "  ";
    out += c;
    at_line_start = c == '\n';
  }
  return out;
}

}  // namespace

Table::Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}

void Table::AddRow(std::vector<std::string> cells) {
  cells.resize(headers_.size());
  for (auto& cell : cells) cell = Sanitize(std::move(cell));
  rows_.push_back(std::move(cells));
}

std::string Table::Render() const {
  std::vector<std::size_t> widths;
  for (const auto& h : headers_) widths.push_back(DisplayWidth(h));
  for (const auto& row : rows_) {
    for (std::size_t i = 0; i < row.size(); ++i)
      widths[i] = std::max(widths[i], DisplayWidth(row[i]));
  }
  auto line = [&](const std::vector<std::string>& cells) {
    std::string out;
    for (std::size_t i = 0; i < cells.size(); ++i) {
      out += cells[i];
      if (i + 1 < cells.size()) out += std::string(widths[i] - DisplayWidth(cells[i]) + 2, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out + "\n";
  };
  std::string out = line(headers_);
  for (const auto& row : rows_) out += line(row);
  return out;
}

std::string RenderKeyValues(const std::vector<std::pair<std::string, std::string>>& pairs) {
  std::size_t width = 0;
  for (const auto& [key, value] : pairs) width = std::max(width, DisplayWidth(key) + 1);
  std::string out;
  for (const auto& [key, value] : pairs) {
    out += key + ":" + std::string(width - DisplayWidth(key) + 1, ' ') + Sanitize(OrDash(value)) +
           "\n";
  }
  return out;
}

std::string Truncate(const std::string& text, std::size_t max_width) {
  if (DisplayWidth(text) <= max_width) return text;
  if (max_width == 0) return "";
  std::size_t kept = 0, i = 0;
  for (; i < text.size(); ++i) {
    if (!IsContinuationByte(text[i]) && kept++ == max_width - 1) break;
  }
  return text.substr(0, i) + "…";
}

std::string FormatRelative(Timestamp t, Timestamp now) {
  using std::chrono::duration_cast;
  const bool future = t > now;
  long long s = duration_cast<std::chrono::seconds>(future ? t - now : now - t).count();
  if (s < 5) return "just now";
  // Two units at most, one past a week: "2h5m" is useful, "2h5m13s" and "40d3h" are noise.
  if (s >= 7 * 86400) {
    s -= s % 86400;
  } else if (s >= 86400) {
    s -= s % 3600;
  } else if (s >= 3600) {
    s -= s % 60;
  }
  const std::string d = FormatDuration(std::chrono::seconds(s));
  return future ? "in " + d : d + " ago";
}

std::string FormatTimeWithAge(const json& value, Timestamp now) {
  if (!value.is_string()) return "-";
  const std::string text = value.get<std::string>();
  auto t = ParseRfc3339(text);
  return t.ok() ? text + " (" + FormatRelative(*t, now) + ")" : text;
}

std::string FormatAge(const json& value, Timestamp now) {
  if (!value.is_string()) return "-";
  const std::string text = value.get<std::string>();
  auto t = ParseRfc3339(text);
  return t.ok() ? FormatRelative(*t, now) : text;
}

const json& Field(const json& object, const char* key) {
  static const json kNull;
  if (!object.is_object()) return kNull;
  const auto it = object.find(key);
  return it == object.end() ? kNull : *it;
}

std::string Text(const json& object, const char* key) {
  const json& v = Field(object, key);
  if (v.is_null()) return "";
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string ShellJoin(const json& argv) {
  if (!argv.is_array()) return "";
  std::string out;
  for (const auto& item : argv) {
    std::string arg = item.is_string() ? item.get<std::string>() : item.dump();
    const bool plain = !arg.empty() && arg.find_first_not_of(
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                           "0123456789-_./=:,+@%") == std::string::npos;
    if (!out.empty()) out += ' ';
    if (plain) {
      out += arg;
      continue;
    }
    out += '\'';
    for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    out += '\'';
  }
  return out;
}

std::string PrettyJson(const json& value) {
  return value.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::string RenderJobList(const json& jobs, Timestamp now) {
  // POOL and COST: where the job runs (or last ran) and what it has cost so far, every
  // attempt included, so a list answers "what is this costing me" without a status each.
  Table t({"ID", "NAME", "TEAM", "USER", "STATE", "GPUS", "PRIORITY", "POOL", "COST $", "AGE",
           "REASON"});
  if (jobs.is_array()) {
    for (const auto& j : jobs) {
      t.AddRow({Text(j, "id"), Truncate(OrDash(Text(j, "name")), kNameWidth), Text(j, "team"),
                Text(j, "user"), Text(j, "state"), Text(j, "gpus"), Text(j, "priority"),
                OrDash(Text(j, "pool")), OrDash(Text(j, "cost")),
                FormatAge(Field(j, "created_at"), now),
                Truncate(Sanitize(Text(j, "reason")), kReasonWidth)});
    }
  }
  return t.empty() ? "No jobs.\n" : t.Render();
}

std::string RenderJobDetail(const json& job, Timestamp now) {
  const std::string attempts = Text(job, "attempts") + " of " + Text(job, "max_attempts");
  std::string out = RenderKeyValues({
      {"ID", Text(job, "id")},
      {"Name", Text(job, "name")},
      {"Team", Text(job, "team")},
      {"User", Text(job, "user")},
      {"Project", Text(job, "project")},
      {"State", StateText(job)},
      {"Reason", Text(job, "reason")},
      {"Command", ShellJoin(Field(job, "command"))},
      {"Working dir", Text(job, "working_dir")},
      {"Env", JoinObject(Field(job, "env"), /*keys_only=*/true)},
      {"Resources", GpuText(job)},
      {"Priority", Text(job, "priority")},
      {"Tolerance", ToleranceText(job)},
      {"Deadline", FormatTimeWithAge(Field(job, "deadline"), now)},
      {"Estimate", DurationText(Field(job, "estimate_seconds"))},
      {"Max runtime", DurationText(Field(job, "max_runtime_seconds"))},
      {"After", JoinArray(Field(job, "after"), ", ")},
      {"Labels", JoinObject(Field(job, "labels"), /*keys_only=*/false)},
      {"Attempts", attempts},
      {"Created", FormatTimeWithAge(Field(job, "created_at"), now)},
      {"Updated", FormatTimeWithAge(Field(job, "updated_at"), now)},
      {"Started", FormatTimeWithAge(Field(job, "started_at"), now)},
      {"Finished", FormatTimeWithAge(Field(job, "finished_at"), now)},
  });
  out += "\nAttempt history:\n" + Indent(RenderAttempts(Field(job, "attempt_history")));
  out += "\nLatest checkpoint:\n" + RenderCheckpoint(Field(job, "latest_checkpoint"),
                                                  Field(job, "attempt_history"), now);
  out += "\nEvents:\n" + Indent(RenderEvents(Field(job, "events")));
  // Guardrails: right-sizing advice once the job has ended (null when there is none).
  if (const json& advice = Field(job, "right_sizing"); advice.is_object()) {
    out += "\nRight-sizing:\n  " + Text(advice, "message") + " (saving $" +
           Text(advice, "saving") + ")\n";
  }
  return out;
}

std::string RenderTeams(const json& teams) {
  Table t({"ID", "NAME"});
  if (teams.is_array()) {
    for (const auto& team : teams) t.AddRow({Text(team, "id"), Text(team, "name")});
  }
  return t.empty() ? "No teams.\n" : t.Render();
}

}  // namespace frugal::cli
