// YAML -> JSON for `frugal admin apply`: types come out as the API expects (money stays
// text), duplicate keys and broken YAML are refused with where they are.
#include <gtest/gtest.h>

#include "cli/yaml_json.h"

namespace frugal::cli {
namespace {

using nlohmann::json;

TEST(YamlJsonTest, PlainScalarsGetTypesAndDecimalsStayText) {
  auto j = YamlToJson(
      "pools:\n  - name: a\n    max_gpus: 16\n    price_per_gpu_hour: 1.29\n"
      "    quoted: \"12\"\n    spot: true\n    none: ~\n");
  ASSERT_TRUE(j.ok()) << j.status().ToString();
  const auto& p = (*j)["pools"][0];
  EXPECT_EQ(p["max_gpus"], 16);
  EXPECT_EQ(p["price_per_gpu_hour"], "1.29");  // never a float
  EXPECT_EQ(p["quoted"], "12");                // quoted: always a string
  EXPECT_EQ(p["spot"], true);
  EXPECT_TRUE(p["none"].is_null());
}

TEST(YamlJsonTest, DuplicateKeyIsRefusedWithItsPath) {
  auto j = YamlToJson("teams:\n  - name: a\n    name: b\n");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("teams[0].name: key appears twice"), std::string::npos)
      << j.status().message();
}

// admin_yaml_fuzz: an alias inside its own anchor made a cycle, and the conversion
// recursed until the stack overflowed. It is refused, as is nesting past the limit.
TEST(YamlJsonTest, AliasThatContainsItselfIsRefused) {
  auto j = YamlToJson("pools: &a [*a]\n");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("alias that contains itself"), std::string::npos)
      << j.status().message();
}

// admin_yaml_fuzz: yaml-cpp prints U+FFFF inside quotes as U+FFFD, so a description with
// a noncharacter changed on the way back. Such a value is printed as JSON, which reads back.
TEST(YamlJsonTest, NoncharactersReadBackUnchanged) {
  const json value = {{"pools", json::array({{{"name", "a"}, {"note", "\xef\xbb\xbfx\xef\xbf\xbf"}}})}};
  const std::string printed = JsonToYaml(value);
  auto back = YamlToJson(printed);
  ASSERT_TRUE(back.ok()) << back.status().message() << "\n" << printed;
  EXPECT_EQ(*back, value) << printed;
  // The ordinary case stays block YAML.
  EXPECT_EQ(JsonToYaml(json{{"name", "a"}}), "name: a\n");
}

TEST(YamlJsonTest, NestingPastTheLimitIsRefusedAndAtTheLimitIsRead) {
  auto nested = [](int n) { return std::string(n, '[') + std::string(n, ']') + "\n"; };
  EXPECT_TRUE(YamlToJson(nested(64)).ok());
  auto deep = YamlToJson(nested(200));
  ASSERT_FALSE(deep.ok());
  EXPECT_NE(deep.status().message().find("nested deeper than 64"), std::string::npos)
      << deep.status().message();
}

TEST(YamlJsonTest, BrokenYamlNamesTheLine) {
  auto j = YamlToJson("pools:\n  - name: [\n");
  ASSERT_FALSE(j.ok());
  EXPECT_NE(j.status().message().find("line"), std::string::npos) << j.status().message();
}

// Found by tests/fuzz/admin_yaml_fuzz: the string "True" was printed plain and read back as
// the boolean true (likewise "False", "Null", "NULL").
TEST(YamlJsonTest, StringsSpelledLikeOtherTypesRoundTripAsStrings) {
  const nlohmann::json doc = {{"a", "True"}, {"b", "False"}, {"c", "Null"}, {"d", "NULL"},
                              {"e", "null"}, {"f", "~"}, {"g", "true"}, {"h", "12"}};
  auto back = YamlToJson(JsonToYaml(doc));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, doc) << JsonToYaml(doc);
}

// Found by tests/fuzz/admin_yaml_fuzz: a string ending in carriage returns was printed plain
// and lost its last one on reading.
TEST(YamlJsonTest, StringsWithControlCharactersRoundTrip) {
  const nlohmann::json doc = {{"a", "x\r\r"}, {"b", "tab\there"}, {"c", "\x01"}};
  auto back = YamlToJson(JsonToYaml(doc));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, doc) << JsonToYaml(doc);
}

TEST(YamlJsonTest, RoundTripsThroughYamlOutput) {
  const nlohmann::json doc = {{"pools", {{{"name", "a"}, {"price", "1.29"}, {"max", 4}}}},
                              {"empty", nullptr}};
  auto back = YamlToJson(JsonToYaml(doc));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, doc);
}

}  // namespace
}  // namespace frugal::cli
