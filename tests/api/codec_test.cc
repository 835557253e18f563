#include "api/codec_jobs.h"

#include <gtest/gtest.h>

namespace frugal::api {
namespace {

StatusOr<model::JobSpec> Decode(const std::string& body) {
  auto j = ParseObject(body);
  if (!j.ok()) return j.status();
  return DecodeJobSpec(*j);
}

TEST(CodecTest, DecodesAFullSubmit) {
  auto s = Decode(R"({"command":["python","train.py"],"gpus":4,"gpu_types":["a100","h100"],
    "priority":"high","deadline":"2026-11-23T12:00:00Z","estimate_seconds":3600,
    "max_runtime_seconds":7200,"tolerance":"checkpointed","checkpoint_interval_seconds":600,
    "after":[3,3,4],"labels":{"exp":"lr-sweep"},"env":{"LR":"0.1"},"name":"sweep","project":"llm",
    "max_attempts":5})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->gpus, 4);
  EXPECT_EQ(s->gpu_types.size(), 2u);
  EXPECT_EQ(s->tolerance, model::Tolerance::kCheckpointed);
  EXPECT_EQ(s->after, (std::vector<model::JobId>{3, 4}));  // duplicates collapse
  EXPECT_EQ(s->estimate->count(), 3600);
  EXPECT_EQ(FormatRfc3339(*s->deadline), "2026-11-23T12:00:00Z");
}

TEST(CodecTest, AGangIsNodesAndItsTotalGpus) {
  auto s = Decode(R"({"command":["torchrun","train.py"],"nodes":4,"gpus":32})");
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ(s->nodes, 4);
  EXPECT_EQ(s->gpus, 32);
  auto bad = Decode(R"({"command":["x"],"nodes":4,"gpus":6})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("multiple of nodes"), std::string::npos)
      << bad.status().message();
}

TEST(CodecTest, DefaultsAreSensible) {
  auto s = Decode(R"({"command":["true"]})");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->gpus, 1);
  EXPECT_EQ(s->nodes, 1);
  EXPECT_EQ(s->priority, "normal");
  EXPECT_EQ(s->tolerance, model::Tolerance::kRestartable);
  EXPECT_EQ(s->max_attempts, 3);
}

struct BadCase {
  const char* body;
  StatusCode code;
  const char* field;
};

TEST(CodecTest, RejectsBadInputNamingTheField) {
  const BadCase cases[] = {
      {R"({"command":["x"],"gpu":1})", StatusCode::kInvalidArgument, "gpu"},
      {R"({"gpus":1})", StatusCode::kInvalidArgument, "command"},
      {R"({"command":[]})", StatusCode::kInvalidArgument, "command"},
      {R"({"command":"ls"})", StatusCode::kInvalidArgument, "command"},
      {R"({"command":[1]})", StatusCode::kInvalidArgument, "command[0]"},
      {R"({"command":["x"],"gpus":0})", StatusCode::kInvalidArgument, "gpus"},
      {R"({"command":["x"],"gpus":-2})", StatusCode::kInvalidArgument, "gpus"},
      {R"({"command":["x"],"gpus":1.5})", StatusCode::kInvalidArgument, "gpus"},
      {R"({"command":["x"],"gpus":18446744073709551615})", StatusCode::kInvalidArgument, "gpus"},
      {R"({"command":["x"],"priority":"urgent"})", StatusCode::kInvalidArgument, "priority"},
      {R"({"command":["x"],"tolerance":"yes"})", StatusCode::kInvalidArgument, "tolerance"},
      {R"({"command":["x"],"deadline":"tomorrow"})", StatusCode::kInvalidArgument, "deadline"},
      {R"({"command":["x"],"gpu_types":["a100"],"min_gpu_mem_gb":40})",
       StatusCode::kInvalidArgument, "min_gpu_mem_gb"},
      {R"({"command":["x"],"env":{"1BAD":"v"}})", StatusCode::kInvalidArgument, "env.1BAD"},
      {R"({"command":["x"],"labels":{"Bad Key":"v"}})", StatusCode::kInvalidArgument,
       "labels.Bad Key"},
      {R"({"command":["x"],"max_attempts":0})", StatusCode::kInvalidArgument, "max_attempts"},
      {R"({"command":["x"],"estimate_seconds":100,"max_runtime_seconds":50})",
       StatusCode::kInvalidArgument, "max_runtime_seconds"},
      {R"({"command":["x"],"after":[0]})", StatusCode::kInvalidArgument, "after[0]"},
      {R"({"command":["x"],"nodes":0})", StatusCode::kInvalidArgument, "nodes"},
      {R"({"command":["x"],"nodes":65,"gpus":65})", StatusCode::kInvalidArgument, "nodes"},
      {R"({"command":["x"],"nodes":2,"gpus":3})", StatusCode::kInvalidArgument, "nodes"},
      {R"({"command":["x"],"nodes":2})", StatusCode::kInvalidArgument, "nodes"},
  };
  for (const auto& c : cases) {
    auto s = Decode(c.body);
    ASSERT_FALSE(s.ok()) << c.body;
    EXPECT_EQ(s.status().code(), c.code) << c.body << " -> " << s.status().ToString();
    EXPECT_EQ(s.status().field(), c.field) << c.body;
  }
}

TEST(CodecTest, ParseObjectRejectsNonObjects) {
  EXPECT_FALSE(ParseObject("").ok());
  EXPECT_FALSE(ParseObject("[1]").ok());
  EXPECT_FALSE(ParseObject("{\"a\":").ok());
}

TEST(CodecTest, ErrorsEncodeCodeMessageAndField) {
  json e = EncodeError(InvalidArgument("gpus: must be positive", "gpus"));
  EXPECT_EQ(e["error"]["code"], "invalid_argument");
  EXPECT_EQ(e["error"]["field"], "gpus");
  EXPECT_TRUE(EncodeError(NotFound("x"))["error"]["field"].is_null());
}

}  // namespace
}  // namespace frugal::api
