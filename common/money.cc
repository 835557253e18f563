#include "common/money.h"

#include <cctype>
#include <cstdio>

namespace frugal {

StatusOr<Micros> ParseDollars(const std::string& s, bool allow_negative) {
  const Status bad = InvalidArgument("'" + s.substr(0, 32) + "' is not an amount like 12.50");
  size_t p = 0;
  bool neg = false;
  if (p < s.size() && s[p] == '-') {
    if (!allow_negative) return InvalidArgument("amount must not be negative");
    neg = true;
    ++p;
  }
  Micros whole = 0;
  size_t start = p;
  while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
    whole = whole * 10 + (s[p] - '0');
    if (whole > 1'000'000'000'000LL) return bad;
    ++p;
  }
  if (p == start) return bad;
  Micros frac = 0;
  int digits = 0;
  if (p < s.size() && s[p] == '.') {
    ++p;
    while (p < s.size() && std::isdigit(static_cast<unsigned char>(s[p]))) {
      if (++digits > 6) return InvalidArgument("amount has more than 6 decimals");
      frac = frac * 10 + (s[p] - '0');
      ++p;
    }
    if (digits == 0) return bad;
  }
  if (p != s.size()) return bad;
  for (; digits < 6; ++digits) frac *= 10;
  Micros v = whole * kMicrosPerDollar + frac;
  return neg ? -v : v;
}

std::string FormatDollars(Micros m, bool full_precision) {
  bool neg = m < 0;
  unsigned long long a = neg ? -static_cast<unsigned long long>(m) : m;
  char buf[48];
  if (full_precision) {
    std::snprintf(buf, sizeof buf, "%s%llu.%06llu", neg ? "-" : "", a / 1'000'000, a % 1'000'000);
  } else {
    unsigned long long cents = (a + 5'000) / 10'000;
    std::snprintf(buf, sizeof buf, "%s%llu.%02llu", neg ? "-" : "", cents / 100, cents % 100);
  }
  return buf;
}

}  // namespace frugal
