// Money is an integer number of micro-dollars, never a float (CONVENTIONS.md rule 7).
#pragma once

#include <cstdint>
#include <string>

#include "common/status.h"

namespace frugal {

using Micros = std::int64_t;  // 1 dollar = 1'000'000 micros

constexpr Micros kMicrosPerDollar = 1'000'000;

// "12.345678" -> 12345678. At most 6 decimals; no exponent; no sign unless allow_negative.
StatusOr<Micros> ParseDollars(const std::string& text, bool allow_negative = false);

// 12345678 -> "12.35" (rounded half away from zero to cents) or full precision.
std::string FormatDollars(Micros m, bool full_precision = false);

}  // namespace frugal
