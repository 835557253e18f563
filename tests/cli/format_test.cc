// The CLI's rendering of a job (cli/format.h): pure functions of the server's JSON.
#include "cli/format.h"

#include <gtest/gtest.h>

#include "common/clock.h"

namespace frugal::cli {
namespace {

using nlohmann::json;

// Issue 17: `frugal status` numbered attempts 1, 2, ... in its table but named the latest
// checkpoint's attempt by its global id ("attempt 57"); both now say "#2".
TEST(FormatTest, TheCheckpointNamesItsAttemptByTheTablesNumber) {
  const Timestamp now = *ParseRfc3339("2026-11-26T12:00:00Z");
  json attempt = {{"node", "n1"},        {"pool", "spot"},     {"gpus", 1},
                  {"started_at", "2026-11-26T11:00:00Z"},     {"ended_at", nullptr},
                  {"end_reason", nullptr}, {"stop_kind", nullptr}, {"exit_code", nullptr}};
  json first = attempt, second = attempt;
  first.update({{"id", 41}, {"number", 1}});
  second.update({{"id", 57}, {"number", 2}});
  const json detail = {
      {"id", 9}, {"name", "train"}, {"state", "running"}, {"command", {"python", "t.py"}},
      {"attempts", 2}, {"max_attempts", 3},
      {"attempt_history", {first, second}},
      {"latest_checkpoint",
       {{"step", 100}, {"progress", 0.5}, {"uri", "file:///c/100"}, {"size_bytes", 10},
        {"attempt_id", 57}, {"created_at", "2026-11-26T11:30:00Z"}}},
      {"events", json::array()}};
  const std::string out = RenderJobDetail(detail, now);
  EXPECT_NE(out.find("(attempt #2)"), std::string::npos) << out;
  EXPECT_EQ(out.find("attempt 57"), std::string::npos) << out;
}

// A multi-node gang: the job says how its GPUs are spread, and each part of an attempt is
// numbered attempt.rank; a single-node attempt keeps its plain number.
TEST(FormatTest, AGangShowsItsNodesAndEachPartsRank) {
  const Timestamp now = *ParseRfc3339("2026-11-26T12:00:00Z");
  json attempt = {{"pool", "spot"}, {"gpus", 8}, {"started_at", "2026-11-26T11:00:00Z"},
                  {"ended_at", nullptr}, {"end_reason", nullptr}, {"stop_kind", nullptr},
                  {"exit_code", nullptr}, {"number", 1}};
  json r0 = attempt, r1 = attempt;
  r0.update({{"id", 1}, {"rank", 0}, {"node", "n1"}});
  r1.update({{"id", 2}, {"rank", 1}, {"node", "n2"}});
  const json detail = {
      {"id", 9}, {"name", "train"}, {"state", "running"}, {"command", {"torchrun", "t.py"}},
      {"gpus", 16}, {"nodes", 2}, {"attempts", 1}, {"max_attempts", 3},
      {"attempt_history", {r0, r1}}, {"latest_checkpoint", nullptr},
      {"events", json::array()}};
  const std::string out = RenderJobDetail(detail, now);
  EXPECT_NE(out.find("16 GPUs on 2 nodes (8 each)"), std::string::npos) << out;
  EXPECT_NE(out.find("1.0 "), std::string::npos) << out;
  EXPECT_NE(out.find("1.1 "), std::string::npos) << out;
}

}  // namespace
}  // namespace frugal::cli
