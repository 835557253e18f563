// Hashing and randomness for tokens and idempotency. Backed by OpenSSL.
#pragma once

#include <string>

namespace frugal {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(const std::string& data);

// A fresh API token: "frg_" + 43 url-safe characters (256 random bits from the OS CSPRNG).
std::string NewToken();

}  // namespace frugal
