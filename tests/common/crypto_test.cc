#include "common/crypto.h"

#include <gtest/gtest.h>

namespace frugal {
namespace {

TEST(CryptoTest, Sha256MatchesKnownVector) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(CryptoTest, TokensAreFreshAndUrlSafe) {
  std::string a = NewToken(), b = NewToken();
  EXPECT_NE(a, b);
  ASSERT_EQ(a.size(), 4u + 43u);  // "frg_" + 256 bits in base64url
  EXPECT_EQ(a.substr(0, 4), "frg_");
  EXPECT_EQ(a.find_first_not_of(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_", 4),
            std::string::npos);
}

}  // namespace
}  // namespace frugal
