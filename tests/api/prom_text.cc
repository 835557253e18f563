#include "tests/api/prom_text.h"

#include <cmath>
#include <cstdlib>
#include <set>

namespace frugal::testing {

namespace {

bool IsNameChar(char c, bool first, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':') ||
         (!first && c >= '0' && c <= '9');
}

bool ValidName(const std::string& s, bool colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i)
    if (!IsNameChar(s[i], i == 0, colon)) return false;
  return true;
}

StatusOr<double> ParseValue(const std::string& s) {
  if (s == "+Inf" || s == "Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return NAN;
  if (s.empty()) return InvalidArgument("empty value");
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || s.find_first_of("xXpP") != std::string::npos)
    return InvalidArgument("bad value '" + s + "'");
  return v;
}

// name{l="v",...} value [timestamp]
StatusOr<PromSample> ParseSample(const std::string& line) {
  PromSample s;
  size_t i = 0;
  while (i < line.size() && IsNameChar(line[i], i == 0, true)) ++i;
  s.name = line.substr(0, i);
  if (!ValidName(s.name, true)) return InvalidArgument("bad metric name");
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      size_t start = i;
      while (i < line.size() && IsNameChar(line[i], i == start, false)) ++i;
      std::string label = line.substr(start, i - start);
      if (!ValidName(label, false)) return InvalidArgument("bad label name");
      if (line.compare(i, 2, "=\"") != 0) return InvalidArgument("expected =\" after " + label);
      i += 2;
      std::string value;
      while (i < line.size() && line[i] != '"') {
        if (line[i] == '\\') {
          if (i + 1 >= line.size()) return InvalidArgument("dangling escape");
          const char e = line[i + 1];
          if (e == '\\') value += '\\';
          else if (e == '"') value += '"';
          else if (e == 'n') value += '\n';
          else return InvalidArgument(std::string("bad escape \\") + e);
          i += 2;
        } else {
          value += line[i++];
        }
      }
      if (i >= line.size()) return InvalidArgument("unterminated label value");
      ++i;
      if (!s.labels.emplace(label, value).second) return InvalidArgument("duplicate label " + label);
      if (i < line.size() && line[i] == ',') ++i;
      else if (i < line.size() && line[i] != '}') return InvalidArgument("expected , or }");
    }
    if (i >= line.size()) return InvalidArgument("unterminated label set");
    ++i;
  }
  if (i >= line.size() || line[i] != ' ') return InvalidArgument("expected a space before the value");
  std::string rest = line.substr(i + 1);
  auto sp = rest.find(' ');
  ASSIGN_OR_RETURN(s.value, ParseValue(rest.substr(0, sp)));
  if (sp != std::string::npos) {
    const std::string ts = rest.substr(sp + 1);
    if (ts.empty() || ts.find_first_not_of("-0123456789") != std::string::npos)
      return InvalidArgument("bad timestamp");
  }
  return s;
}

// The family a sample belongs to: a histogram's _bucket/_sum/_count strip to its name.
std::string FamilyOf(const std::string& sample, const std::map<std::string, PromFamily>& fams) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (sample.size() > s.size() && sample.compare(sample.size() - s.size(), s.size(), s) == 0) {
      auto base = sample.substr(0, sample.size() - s.size());
      auto it = fams.find(base);
      if (it != fams.end() && (it->second.type == "histogram" || it->second.type == "summary"))
        return base;
    }
  }
  return sample;
}

Status CheckHistogram(const PromFamily& f) {
  std::map<PromLabels, std::vector<std::pair<double, double>>> buckets;
  std::map<PromLabels, double> counts, sums;
  for (const auto& s : f.samples) {
    PromLabels key = s.labels;
    if (s.name == f.name + "_bucket") {
      auto le = key.find("le");
      if (le == key.end()) return InvalidArgument(f.name + ": bucket without le");
      ASSIGN_OR_RETURN(double bound, ParseValue(le->second));
      key.erase(le);
      buckets[key].push_back({bound, s.value});
    } else if (s.name == f.name + "_count") {
      counts[key] = s.value;
    } else if (s.name == f.name + "_sum") {
      sums[key] = s.value;
    } else {
      return InvalidArgument(f.name + ": unexpected sample " + s.name);
    }
  }
  for (const auto& [key, bs] : buckets) {
    for (size_t i = 1; i < bs.size(); ++i) {
      if (!(bs[i].first > bs[i - 1].first)) return InvalidArgument(f.name + ": le not ascending");
      if (bs[i].second < bs[i - 1].second) return InvalidArgument(f.name + ": bucket counts go down");
    }
    if (bs.empty() || !std::isinf(bs.back().first)) return InvalidArgument(f.name + ": no +Inf bucket");
    if (!counts.count(key) || counts[key] != bs.back().second)
      return InvalidArgument(f.name + ": +Inf bucket differs from _count");
    if (!sums.count(key)) return InvalidArgument(f.name + ": no _sum");
  }
  if (counts.size() != buckets.size() || sums.size() != buckets.size())
    return InvalidArgument(f.name + ": _count or _sum without buckets");
  return Status::Ok();
}

}  // namespace

double PromExposition::Sum(const std::string& sample, const PromLabels& match) const {
  double total = 0;
  for (const auto& [name, f] : families) {
    for (const auto& s : f.samples) {
      if (s.name != sample) continue;
      bool ok = true;
      for (const auto& [k, v] : match) ok = ok && s.labels.count(k) && s.labels.at(k) == v;
      if (ok) total += s.value;
    }
  }
  return total;
}

int PromExposition::Count(const std::string& sample, const PromLabels& match) const {
  int n = 0;
  for (const auto& [name, f] : families) {
    for (const auto& s : f.samples) {
      bool ok = s.name == sample;
      for (const auto& [k, v] : match) ok = ok && s.labels.count(k) && s.labels.at(k) == v;
      n += ok;
    }
  }
  return n;
}

StatusOr<PromExposition> ParsePromText(const std::string& text) {
  PromExposition out;
  if (!text.empty() && text.back() != '\n') return InvalidArgument("the last line has no newline");
  std::set<std::string> closed;  // families whose samples have ended: none may follow
  std::set<std::pair<std::string, PromLabels>> series;
  std::string current;
  size_t start = 0;
  for (int line_no = 1; start < text.size(); ++line_no) {
    const size_t nl = text.find('\n', start);
    const std::string line = text.substr(start, nl - start);
    start = nl + 1;
    auto fail = [&](const std::string& why) {
      return InvalidArgument("line " + std::to_string(line_no) + ": " + why + ": " + line);
    };
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::string kind = line.substr(0, 7);
      if (kind != "# HELP " && kind != "# TYPE ") continue;  // a comment
      const std::string rest = line.substr(7);
      const auto sp = rest.find(' ');
      const std::string name = rest.substr(0, sp);
      const std::string arg = sp == std::string::npos ? "" : rest.substr(sp + 1);
      if (!ValidName(name, true)) return fail("bad metric name");
      if (closed.count(name)) return fail("family appears twice");
      if (current != name && !current.empty()) closed.insert(current);
      current = name;
      PromFamily& f = out.families[name];
      f.name = name;
      if (kind == "# HELP ") {
        if (!f.help.empty()) return fail("second HELP");
        for (size_t i = 0; i < arg.size(); ++i) {
          if (arg[i] != '\\') continue;
          if (i + 1 >= arg.size() || (arg[i + 1] != '\\' && arg[i + 1] != 'n'))
            return fail("bad escape in HELP");
          ++i;  // the escaped character
        }
        f.help = arg.empty() ? " " : arg;
      } else {
        if (!f.type.empty()) return fail("second TYPE");
        if (!f.samples.empty()) return fail("TYPE after samples");
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.count(arg)) return fail("unknown type");
        f.type = arg;
      }
      continue;
    }
    auto sample = ParseSample(line);
    if (!sample.ok()) return fail(sample.status().message());
    const std::string family = FamilyOf(sample->name, out.families);
    if (closed.count(family)) return fail("family split in two");
    if (family != current && !current.empty()) closed.insert(current);
    current = family;
    PromFamily& f = out.families[family];
    f.name = family;
    if (f.type.empty()) return fail("sample without a TYPE line");
    if (f.type == "histogram" && sample->labels.count("le") == 0 &&
        sample->name == family + "_bucket")
      return fail("bucket without le");
    if (f.type != "histogram" && sample->labels.count("le")) return fail("le outside a histogram");
    if (f.type == "counter" && !(sample->value >= 0)) return fail("negative or NaN counter");
    if (!series.insert({sample->name, sample->labels}).second) return fail("duplicate series");
    f.samples.push_back(std::move(sample).value());
  }
  for (const auto& [name, f] : out.families) {
    if (f.type.empty()) return InvalidArgument(name + ": no TYPE");
    if (f.help.empty()) return InvalidArgument(name + ": no HELP");
    if (f.type == "histogram") RETURN_IF_ERROR(CheckHistogram(f));
  }
  return out;
}

}  // namespace frugal::testing
