// Hashing and randomness for tokens and idempotency. Backed by OpenSSL.
#pragma once

#include <string>

namespace frugal {

// Lower-case hex SHA-256 of `data`.
std::string Sha256Hex(const std::string& data);

// A fresh API token: `prefix` + 43 url-safe characters (256 random bits from the OS
// CSPRNG). "frg_" for API tokens, "frn_" for node credentials, so a leaked one says what it is.
std::string NewToken(const std::string& prefix = "frg_");

// 256 random bits from the OS CSPRNG as 64 lower-case hex characters: attempt secrets.
std::string NewSecretHex();

// Whether `a` and `b` are equal, in time that depends only on their lengths: comparing a
// presented secret must not leak how much of it was right.
bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace frugal
