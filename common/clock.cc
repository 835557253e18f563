#include "common/clock.h"

#include <cctype>
#include <cstdio>
#include <ctime>

namespace frugal {

Timestamp SystemClock::Now() const { return std::chrono::system_clock::now(); }

Timestamp FakeClock::Now() const {
  std::lock_guard<std::mutex> lock(mu_);
  return now_;
}

void FakeClock::Advance(std::chrono::microseconds by) {
  std::lock_guard<std::mutex> lock(mu_);
  now_ += by;
}

std::string FormatRfc3339(Timestamp t) {
  using namespace std::chrono;
  auto secs = time_point_cast<seconds>(t);
  if (secs > t) secs -= seconds(1);  // floor for times before the epoch
  auto micros = duration_cast<microseconds>(t - secs).count();
  std::time_t tt = system_clock::to_time_t(secs);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[40];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string out(buf);
  if (micros != 0) {
    char frac[32];
    std::snprintf(frac, sizeof frac, ".%06lld", static_cast<long long>(micros));
    out += frac;
  }
  return out + "Z";
}

namespace {

bool ReadInt(const std::string& s, size_t& pos, int digits, int& out) {
  if (pos + digits > s.size()) return false;
  out = 0;
  for (int i = 0; i < digits; ++i) {
    char c = s[pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    out = out * 10 + (c - '0');
  }
  pos += digits;
  return true;
}

bool Expect(const std::string& s, size_t& pos, char c) {
  if (pos >= s.size() || (s[pos] != c && std::toupper(s[pos]) != c)) return false;
  ++pos;
  return true;
}

}  // namespace

// Years a Timestamp can hold, with margin (int64 nanoseconds: 1677-09-21 to 2262-04-11).
constexpr int kMinYear = 1700;
constexpr int kMaxYear = 2261;

StatusOr<Timestamp> ParseRfc3339(const std::string& s) {
  const Status bad = InvalidArgument("'" + s.substr(0, 64) +
                                     "' is not an RFC 3339 time like 2026-11-22T18:00:00Z");
  size_t p = 0;
  int y, mo, d, h, mi, sec;
  if (!ReadInt(s, p, 4, y) || !Expect(s, p, '-') || !ReadInt(s, p, 2, mo) ||
      !Expect(s, p, '-') || !ReadInt(s, p, 2, d) || !Expect(s, p, 'T') ||
      !ReadInt(s, p, 2, h) || !Expect(s, p, ':') || !ReadInt(s, p, 2, mi) ||
      !Expect(s, p, ':') || !ReadInt(s, p, 2, sec)) {
    return bad;
  }
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 60) return bad;
  // Timestamp counts nanoseconds in an int64: years outside 1678-2262 overflow it (undefined
  // behaviour, a wrapped time in practice). Found by tests/fuzz/job_submit_fuzz.
  if (y < kMinYear || y > kMaxYear) {
    return InvalidArgument("'" + s.substr(0, 64) + "' is outside the years " +
                           std::to_string(kMinYear) + " to " + std::to_string(kMaxYear));
  }
  static const int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return bad;  // no 2099-02-31
  long long micros = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    int n = 0;
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
      if (n < 6) micros = micros * 10 + (s[p] - '0');
      ++n;
      ++p;
    }
    if (n == 0) return bad;
    for (; n < 6; ++n) micros *= 10;
  }
  int offset_min = 0;
  if (p < s.size() && (s[p] == 'Z' || s[p] == 'z')) {
    ++p;
  } else if (p < s.size() && (s[p] == '+' || s[p] == '-')) {
    int sign = s[p] == '-' ? -1 : 1;
    ++p;
    int oh, om;
    if (!ReadInt(s, p, 2, oh) || !Expect(s, p, ':') || !ReadInt(s, p, 2, om)) return bad;
    if (oh > 23 || om > 59) return bad;
    offset_min = sign * (oh * 60 + om);
  } else {
    return bad;
  }
  if (p != s.size()) return bad;
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  std::time_t tt = timegm(&tm);
  auto t = std::chrono::system_clock::from_time_t(tt) + std::chrono::microseconds(micros) -
           std::chrono::minutes(offset_min);
  return t;
}

StatusOr<Seconds> ParseDuration(const std::string& s, bool allow_zero) {
  const Status bad = InvalidArgument("'" + s.substr(0, 64) +
                                     "' is not a duration like 90s, 15m, 2h30m or 1d");
  if (s.empty() || s.size() > 32) return bad;
  long long total = 0;
  size_t p = 0;
  bool any_unit = false;
  while (p < s.size()) {
    long long n = 0;
    size_t start = p;
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
      n = n * 10 + (s[p] - '0');
      if (n > 10LL * 365 * 86400) return bad;
      ++p;
    }
    if (p == start) return bad;
    long long unit = 1;
    if (p < s.size()) {
      switch (s[p]) {
        case 's': unit = 1; break;
        case 'm': unit = 60; break;
        case 'h': unit = 3600; break;
        case 'd': unit = 86400; break;
        default: return bad;
      }
      ++p;
      any_unit = true;
    } else if (any_unit) {
      return bad;  // "2h30" is ambiguous
    }
    total += n * unit;
  }
  if (total > 10LL * 365 * 86400) return bad;
  if (total == 0 && !allow_zero) return InvalidArgument("duration must be greater than zero");
  return Seconds(total);
}

std::string FormatDuration(Seconds d) {
  long long s = d.count();
  if (s == 0) return "0s";
  std::string out;
  if (s < 0) {
    out = "-";
    s = -s;
  }
  const long long days = s / 86400, hours = s % 86400 / 3600, mins = s % 3600 / 60,
                  secs = s % 60;
  if (days) out += std::to_string(days) + "d";
  if (hours) out += std::to_string(hours) + "h";
  if (mins) out += std::to_string(mins) + "m";
  if (secs) out += std::to_string(secs) + "s";
  return out;
}

}  // namespace frugal
