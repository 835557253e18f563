#include "scheduler/model/availability_history.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>

namespace frugal::model {

std::vector<Spell> SpellsFromLives(std::vector<NodeLife> lives, double now_s,
                                   std::vector<double> stockouts_s, int need) {
  need = std::max(1, need);
  std::sort(stockouts_s.begin(), stockouts_s.end());
  // The components: maximal stretches with at least `need` lives at once. A sweep over
  // starts and ends; at one instant starts come first, so lives that touch join, and a
  // component that ends there follows the lives ending there: released only if all were.
  struct Event {
    double t;
    int delta;
    bool released;
  };
  std::vector<Event> events;
  for (const auto& l : lives) {
    if (l.start_s > now_s) continue;
    events.push_back({l.start_s, +1, false});
    events.push_back({std::min(std::max(l.end_s, l.start_s), now_s), -1, l.released});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.t != b.t ? a.t < b.t : a.delta > b.delta;
  });
  struct Component {
    double start, end;
    bool released;
  };
  std::vector<Component> comps;
  int count = 0;
  for (size_t i = 0; i < events.size();) {
    const double t = events[i].t;
    const bool was_up = count >= need;
    for (; i < events.size() && events[i].t == t && events[i].delta > 0; ++i) ++count;
    if (!was_up && count >= need) comps.push_back({t, t, true});
    const bool peak_up = count >= need;
    bool released = true;
    for (; i < events.size() && events[i].t == t; ++i) {
      --count;
      released = released && events[i].released;
    }
    // A life of no length still shows the capacity was there, as a spell of none.
    if (peak_up && count < need) comps.back() = {comps.back().start, t, released};
  }
  // The first stockout in [from, to), if any.
  auto first_stockout = [&](double from, double to) -> const double* {
    auto it = std::lower_bound(stockouts_s.begin(), stockouts_s.end(), from);
    return it != stockouts_s.end() && *it < to ? &*it : nullptr;
  };
  std::vector<Spell> out;
  if (const double* s = first_stockout(-HUGE_VAL, comps.empty() ? now_s : comps[0].start)) {
    out.push_back({false, *s, comps.empty() ? now_s : comps[0].start, !comps.empty()});
  }
  for (size_t i = 0; i < comps.size(); ++i) {
    const auto& c = comps[i];
    const bool last = i + 1 == comps.size();
    const double gap_end = last ? now_s : comps[i + 1].start;
    out.push_back({true, c.start, c.end, false});
    if (c.end >= gap_end) continue;  // reaches now: the up spell goes on
    if (!c.released) {
      out.back().ended = true;
      out.push_back({false, c.end, gap_end, !last});
    } else if (const double* s = first_stockout(c.end, gap_end)) {
      out.push_back({false, *s, gap_end, !last});  // the up spell stays cut before it
    }
  }
  return out;
}

void AddSpells(const std::vector<Spell>& spells, AvailabilityModel& m) {
  struct Run {
    bool up;
    std::int64_t ticks;
    bool ended;
  };
  const double tick = static_cast<double>(m.tick_seconds);
  std::vector<Run> runs;
  double origin = 0;
  bool new_run = true;  // the first spell, or the one after a cut
  for (const auto& s : spells) {
    if (new_run) origin = s.start_s;
    // Rounding both ends from the run's origin, not each spell's length, keeps the run's
    // total: short spells that straddle a tick boundary keep a tick, others vanish.
    const std::int64_t ticks = std::llround((s.end_s - origin) / tick) -
                               std::llround((s.start_s - origin) / tick);
    if (ticks > 0) {
      if (!runs.empty() && !new_run && runs.back().up == s.up) {
        runs.back().ticks += ticks;  // a vanished spell between two of the same side
        runs.back().ended = s.ended;
      } else {
        runs.push_back({s.up, ticks, s.ended});
      }
    }
    new_run = !s.ended;
  }
  for (const auto& r : runs) m.AddSpell(r.up, r.ticks, r.ended);
}

namespace {

std::vector<std::string> SplitCsvLine(const std::string& line) {
  std::vector<std::string> out;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.push_back("");
  for (auto& c : out) {  // tolerate spaces and a CRLF file
    while (!c.empty() && (c.back() == '\r' || c.back() == ' ')) c.pop_back();
    while (!c.empty() && c.front() == ' ') c.erase(c.begin());
  }
  return out;
}

bool ParseNumber(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(out);
}

// "2023-02-15T22:08:16Z" (or with a space, or without the Z) as seconds since the epoch.
bool ParseUtc(const std::string& s, double& out) {
  std::tm tm{};
  int sec = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%d%*c%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &sec) != 6)
    return false;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  tm.tm_sec = sec;
  out = static_cast<double>(timegm(&tm));
  return true;
}

bool IsNotAvailability(const std::string& name) {
  static const char* const kOther[] = {"zone", "tick", "elapsed_s", "timestamp_utc",
                                       "time", "spot_usd_hr"};
  for (const char* o : kOther)
    if (name == o) return true;
  return false;
}

}  // namespace

StatusOr<AvailabilitySeries> ParseAvailabilityCsv(const std::string& text,
                                                  const std::string& zone,
                                                  const std::string& column) {
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line) || SplitCsvLine(line).empty()) {
    return InvalidArgument("the CSV is empty: it needs a header line and rows", "csv");
  }
  const auto header = SplitCsvLine(line);
  auto find = [&](const std::string& name) -> int {
    auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  };
  const int zone_col = find("zone");
  int time_col = find("elapsed_s");
  const bool utc = time_col < 0;
  if (utc) time_col = find("timestamp_utc");
  if (time_col < 0) {
    return InvalidArgument("the CSV header has no time column: it needs elapsed_s or"
                           " timestamp_utc (header: " + line + ")", "csv");
  }
  int value_col = -1;
  if (!column.empty()) {
    value_col = find(column);
    if (value_col < 0) {
      return InvalidArgument("no column '" + column + "' in the CSV header: " + line, "column");
    }
  } else if ((value_col = find("available")) < 0) {
    std::vector<int> candidates;
    for (size_t i = 0; i < header.size(); ++i)
      if (!IsNotAvailability(header[i])) candidates.push_back(static_cast<int>(i));
    if (candidates.size() != 1) {
      return InvalidArgument("cannot tell which column holds the availability (header: " +
                                 line + "): name it with --column", "column");
    }
    value_col = candidates[0];
  }
  AvailabilitySeries s;
  std::map<std::string, int> zones;  // zone -> rows, to name them when none was picked
  int line_no = 1;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty() || line == "\r") continue;
    const auto cells = SplitCsvLine(line);
    const std::string where = "line " + std::to_string(line_no) + ": ";
    if (cells.size() != header.size()) {
      return InvalidArgument(where + "has " + std::to_string(cells.size()) + " fields, the header " +
                                 std::to_string(header.size()), "csv");
    }
    if (zone_col >= 0) {
      ++zones[cells[zone_col]];
      // With no zone picked there must be one: past a second, only name the zones.
      if (zone.empty() ? zones.size() > 1 : cells[zone_col] != zone) continue;
    }
    double t = 0, v = 0;
    if (!(utc ? ParseUtc(cells[time_col], t) : ParseNumber(cells[time_col], t))) {
      return InvalidArgument(where + "bad time '" + cells[time_col] + "' in column " +
                                 header[time_col], "csv");
    }
    if (!ParseNumber(cells[value_col], v) || v < 0) {
      return InvalidArgument(where + "bad availability '" + cells[value_col] + "' in column " +
                                 header[value_col] + " (want 0, 1 or a count)", "csv");
    }
    if (!s.t_s.empty() && t <= s.t_s.back()) {
      return InvalidArgument(where + "time " + cells[time_col] + " is not after the row before",
                             "csv");
    }
    s.t_s.push_back(t);
    s.up.push_back(v > 0 ? 1 : 0);
  }
  if (zone_col >= 0 && zone.empty() && zones.size() > 1) {
    std::string names;
    for (const auto& [z, n] : zones) names += (names.empty() ? "" : ", ") + z;
    return InvalidArgument("the CSV holds " + std::to_string(zones.size()) + " zones (" + names +
                               "): pick one with --zone", "zone");
  }
  if (zone_col >= 0 && !zone.empty() && zones.count(zone) == 0) {
    return InvalidArgument("no rows of zone '" + zone + "' in the CSV", "zone");
  }
  if (s.t_s.size() < 2) {
    return InvalidArgument("the CSV has " + std::to_string(s.t_s.size()) +
                               " data rows: at least 2 are needed to know its step", "csv");
  }
  std::vector<double> gaps;
  for (size_t i = 1; i < s.t_s.size(); ++i) gaps.push_back(s.t_s[i] - s.t_s[i - 1]);
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  s.step_s = gaps[gaps.size() / 2];
  return s;
}

std::vector<Spell> SpellsFromSeries(const AvailabilitySeries& s) {
  std::vector<Spell> out;
  const size_t n = s.t_s.size();
  for (size_t i = 0; i < n; ++i) {
    const bool up = s.up[i] != 0;
    const double gap = i + 1 < n ? s.t_s[i + 1] - s.t_s[i] : s.step_s;
    const bool cut = gap > kMaxGapSteps * s.step_s;
    const double end = s.t_s[i] + (cut ? s.step_s : gap);
    const bool continues = !out.empty() && out.back().up == up && !out.back().ended &&
                           out.back().end_s == s.t_s[i];
    if (continues) {
      out.back().end_s = end;
    } else {
      if (!out.empty() && out.back().end_s == s.t_s[i]) out.back().ended = true;
      out.push_back({up, s.t_s[i], end, false});
    }
  }
  return out;
}

std::string SeriesToCsv(const AvailabilitySeries& s) {
  std::string out = "elapsed_s,available\n";
  char buf[64];
  for (size_t i = 0; i < s.t_s.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%.3f,%d\n", s.t_s[i] - s.t_s[0], s.up[i] ? 1 : 0);
    out += buf;
  }
  return out;
}

}  // namespace frugal::model
