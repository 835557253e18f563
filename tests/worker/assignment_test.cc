// The worker's decoding of an assignment from a heartbeat reply (worker/agent.h), and the
// scheduler's encoding of it (protocol/worker_protocol.h): both ends use the same functions.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "worker/agent.h"

namespace frugal::worker {
namespace {

using nlohmann::json;

StartOrder GangPart() {
  StartOrder o;
  o.attempt_id = 16;
  o.job_id = 9;
  o.attempt = 2;
  o.gpus = 8;
  o.command = {"torchrun", "train.py"};
  o.fence = std::string(64, 'c');
  o.rank = 2;
  o.gang_size = 4;
  o.master_addr = "gpu-7.internal";
  o.master_port = 29500;
  return o;
}

// The field a refusal names, or "" when the assignment was taken.
std::string RefusedField(const json& j) {
  auto parsed = ParseStartOrder(j);
  if (parsed.ok()) return "";
  EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
  return parsed.status().field();
}

// Found by tests/fuzz/worker_assignment_fuzz: a float out of int's range in an integer field
// reached get<int>() (undefined behaviour) instead of being refused.
TEST(AssignmentTest, NumbersThatAreNotWholeAreRefused) {
  json a = {{"attempt_id", 7}, {"job_id", 3}, {"attempt", 1.1e83}, {"gpus", 1},
            {"command", {"true"}}, {"fence", std::string(64, 'a')}};
  auto parsed = ParseStartOrder(a);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("attempt must be a whole number"), std::string::npos)
      << parsed.status().message();
  a["attempt"] = 1;
  EXPECT_TRUE(ParseStartOrder(a).ok());
  a["max_runtime_seconds"] = 0.5;
  EXPECT_FALSE(ParseStartOrder(a).ok());
}

TEST(AssignmentTest, GangPartRoundTrips) {
  const json j = protocol::Encode(GangPart());
  ASSERT_TRUE(j.contains("gang")) << j.dump();
  EXPECT_EQ(j["gang"], json({{"rank", 2}, {"size", 4}, {"master_addr", "gpu-7.internal"},
                             {"master_port", 29500}}));
  auto parsed = ParseStartOrder(j);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->rank, 2);
  EXPECT_EQ(parsed->gang_size, 4);
  EXPECT_EQ(parsed->master_addr, "gpu-7.internal");
  EXPECT_EQ(parsed->master_port, 29500);
  EXPECT_EQ(parsed->command, GangPart().command);
  EXPECT_EQ(protocol::Encode(*parsed), j);
}

// A single-node attempt carries no "gang" (what older workers and schedulers know), and one
// without it is a single node.
TEST(AssignmentTest, SingleNodeCarriesNoGang) {
  StartOrder single = GangPart();
  single.rank = 0;
  single.gang_size = 1;
  single.master_addr = "";
  single.master_port = 0;
  json j = protocol::Encode(single);
  EXPECT_FALSE(j.contains("gang")) << j.dump();
  auto parsed = ParseStartOrder(j);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  EXPECT_EQ(parsed->gang_size, 1);
  EXPECT_EQ(parsed->rank, 0);
  EXPECT_EQ(parsed->master_addr, "");
  EXPECT_EQ(parsed->master_port, 0);
  j["gang"] = nullptr;  // null is absent
  EXPECT_EQ(RefusedField(j), "");
}

TEST(AssignmentTest, GangExtremesAreTaken) {
  json j = protocol::Encode(GangPart());
  j["gang"] = {{"rank", 63}, {"size", 64}, {"master_addr", std::string(255, 'a')},
               {"master_port", 65535}};
  EXPECT_EQ(RefusedField(j), "");
  j["gang"] = {{"rank", 0}, {"size", 2}, {"master_addr", "10.0.0.7"}, {"master_port", 1}};
  EXPECT_EQ(RefusedField(j), "");
}

TEST(AssignmentTest, BadGangsNameTheirField) {
  const json good = protocol::Encode(GangPart());
  struct Case {
    const char* key;
    std::optional<json> value;  // nullopt: the key is left out
    const char* field;
  };
  const Case cases[] = {
      {"size", 1, "gang.size"},
      {"size", 65, "gang.size"},
      {"size", 0, "gang.size"},
      {"size", -4, "gang.size"},
      {"size", 2.0, "gang.size"},
      {"size", 1.1e83, "gang.size"},
      {"size", "4", "gang.size"},
      {"size", 18446744073709551615ULL, "gang.size"},
      {"size", std::nullopt, "gang.size"},
      {"rank", -1, "gang.rank"},
      {"rank", 4, "gang.rank"},  // == size
      {"rank", 1.5, "gang.rank"},
      {"rank", nullptr, "gang.rank"},
      {"rank", std::nullopt, "gang.rank"},
      {"master_addr", "", "gang.master_addr"},
      {"master_addr", std::string(256, 'a'), "gang.master_addr"},
      {"master_addr", "gpu 7", "gang.master_addr"},
      {"master_addr", "gpu-7\n", "gang.master_addr"},
      {"master_addr", "gpu-7\t", "gang.master_addr"},
      {"master_addr", 7, "gang.master_addr"},
      {"master_addr", nullptr, "gang.master_addr"},
      {"master_addr", std::nullopt, "gang.master_addr"},
      {"master_port", 0, "gang.master_port"},
      {"master_port", 65536, "gang.master_port"},
      {"master_port", -1, "gang.master_port"},
      {"master_port", "29500", "gang.master_port"},
      {"master_port", std::nullopt, "gang.master_port"},
  };
  for (const Case& c : cases) {
    json j = good;
    if (c.value) {
      j["gang"][c.key] = *c.value;
    } else {
      j["gang"].erase(c.key);
    }
    EXPECT_EQ(RefusedField(j), c.field) << j["gang"].dump();
  }
  for (const json& gang : {json::array({2, 4}), json("4"), json(4), json::object()}) {
    json j = good;
    j["gang"] = gang;
    EXPECT_NE(RefusedField(j), "") << gang.dump();
  }
  json j = good;
  j["gang"] = json::array();
  EXPECT_EQ(RefusedField(j), "gang");
}

TEST(AssignmentTest, RefusalsSayWhatToFix) {
  json j = protocol::Encode(GangPart());
  j["gang"]["size"] = 65;
  auto parsed = ParseStartOrder(j);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("from 2 to 64"), std::string::npos)
      << parsed.status().message();
  j = protocol::Encode(GangPart());
  j["gang"]["rank"] = 4;
  parsed = ParseStartOrder(j);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("from 0 to size - 1 (3)"), std::string::npos)
      << parsed.status().message();
}

// Registration's "address" and a gang's master_addr are checked alike.
TEST(AssignmentTest, AddressesAreHostNamesOrIpLiterals) {
  const std::vector<std::string> good = {"gpu-7.internal", "10.0.0.7", "fe80::1%eth0", "[::1]",
                                         "a", std::string(255, 'x')};
  for (const std::string& ok : good) {
    EXPECT_TRUE(protocol::CheckAddress(ok, "address").ok()) << ok;
  }
  // Empty, too long, whitespace, control characters (DEL, NUL), and anything not ASCII
  // (an umlaut, an em space).
  const std::vector<std::string> bad_ones = {
      "", std::string(256, 'x'), "gpu 7", " gpu-7", "gpu-7\r\n", "gpu\x7f",
      std::string("gpu\0x", 5), "n\xc3\xb6" "de", "gpu\xe2\x80\x83"};
  for (const std::string& bad : bad_ones) {
    const Status st = protocol::CheckAddress(bad, "address");
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_EQ(st.field(), "address");
    EXPECT_EQ(st.message().rfind("address: ", 0), 0u) << st.message();
    EXPECT_NE(st.message().find("host name or IP address"), std::string::npos) << st.message();
  }
}

}  // namespace
}  // namespace frugal::worker
