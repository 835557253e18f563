// Guardrail decisions, pure: max_runtime per class, approval, idle steps, right-sizing
// arithmetic.
#include "scheduler/policy/guardrails/guardrails.h"

#include <gtest/gtest.h>

namespace frugal::policy {
namespace {

using model::IdleStep;

model::GuardrailSettings Settings() {
  model::GuardrailSettings s;
  s.runtimes["normal"] = {Seconds(3600), Seconds(86400)};
  s.runtimes["low"] = {std::nullopt, Seconds(7200)};
  s.premium_gpu_types = {"a100", "h100"};
  s.approval_above_gpus = 8;
  return s;
}

TEST(ClassRuntimeTest, JobWithoutMaxRuntimeGetsTheClassDefault) {
  model::JobSpec spec;
  spec.priority = "normal";
  auto out = ApplyClassRuntime(spec, Settings());
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->max_runtime, Seconds(3600));
}

TEST(ClassRuntimeTest, AskingAboveTheClassMaximumIsRefusedNamingIt) {
  model::JobSpec spec;
  spec.priority = "low";
  spec.max_runtime = Seconds(7201);
  auto out = ApplyClassRuntime(spec, Settings());
  ASSERT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(out.status().field(), "max_runtime_seconds");
  EXPECT_NE(out.status().message().find("'low' (2h)"), std::string::npos) << out.status().message();
  spec.max_runtime = Seconds(7200);  // at the maximum: fine
  EXPECT_EQ(ApplyClassRuntime(spec, Settings())->max_runtime, Seconds(7200));
}

TEST(ClassRuntimeTest, ClassWithoutRulesAndNoDefaultLeaveTheSpecAlone) {
  model::JobSpec spec;
  spec.priority = "critical";
  EXPECT_FALSE(ApplyClassRuntime(spec, Settings())->max_runtime);
  spec.priority = "low";  // a maximum but no default
  EXPECT_FALSE(ApplyClassRuntime(spec, Settings())->max_runtime);
}

TEST(ApprovalTest, BigPremiumRequestNeedsApprovalSmallOrCheapDoesNot) {
  model::JobSpec spec;
  spec.gpus = 16;
  spec.gpu_types = {"a100"};
  auto why = ApprovalReason(spec, Settings());
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("awaiting admin approval"), std::string::npos);
  EXPECT_NE(why->find("(a100)"), std::string::npos);
  spec.gpus = 8;  // not more than 8
  EXPECT_FALSE(ApprovalReason(spec, Settings()));
  spec.gpus = 16;
  spec.gpu_types = {"t4", "l4"};  // cannot land on premium
  EXPECT_FALSE(ApprovalReason(spec, Settings()));
  spec.gpu_types = {};  // any type may be premium
  EXPECT_TRUE(ApprovalReason(spec, Settings()));
}

TEST(ApprovalTest, OffWithoutPremiumTypes) {
  auto s = Settings();
  s.premium_gpu_types.clear();
  model::JobSpec spec;
  spec.gpus = 1000;
  EXPECT_FALSE(ApprovalReason(spec, s));
}

model::IdleBatch Batch(model::IdlePolicy policy, bool warned, bool checkpoint, int idle_s) {
  model::IdleBatch b;
  b.now = Timestamp(Seconds(100000));
  b.window = Seconds(600);
  b.attempts.push_back({7, 3, "n1", b.now - Seconds(idle_s), warned, checkpoint, policy});
  return b;
}

TEST(DecideIdleTest, NothingBeforeTheWindow) {
  EXPECT_TRUE(DecideIdle(Batch(model::IdlePolicy::kRequeue, false, true, 599)).empty());
}

TEST(DecideIdleTest, WarnPolicyWarnsOnceAndNeverStops) {
  auto first = DecideIdle(Batch(model::IdlePolicy::kWarn, false, true, 600));
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(first[0].warn);
  EXPECT_EQ(first[0].stop, IdleStep::kNone);
  EXPECT_NE(first[0].message.find("under 5% utilisation for 10m on n1"), std::string::npos)
      << first[0].message;
  EXPECT_TRUE(DecideIdle(Batch(model::IdlePolicy::kWarn, true, true, 5000)).empty());
}

TEST(DecideIdleTest, RequeuePolicyRequeuesACheckpointedJobAndStopsOneWithout) {
  auto requeue = DecideIdle(Batch(model::IdlePolicy::kRequeue, false, true, 700));
  ASSERT_EQ(requeue.size(), 1u);
  EXPECT_TRUE(requeue[0].warn);
  EXPECT_EQ(requeue[0].stop, IdleStep::kRequeue);
  auto stop = DecideIdle(Batch(model::IdlePolicy::kRequeue, true, false, 700));
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_FALSE(stop[0].warn);  // already warned
  EXPECT_EQ(stop[0].stop, IdleStep::kStop);
  EXPECT_NE(stop[0].message.find("never checkpointed"), std::string::npos);
}

TEST(DecideIdleTest, AJobIdleAgainAfterARequeueIsStopped) {
  model::IdleBatch b = Batch(model::IdlePolicy::kRequeue, false, true, 700);
  b.attempts[0].idle_requeues = kMaxIdleRequeues;
  auto stop = DecideIdle(b);
  ASSERT_EQ(stop.size(), 1u);
  EXPECT_TRUE(stop[0].warn);
  EXPECT_EQ(stop[0].stop, IdleStep::kStop);
  EXPECT_NE(stop[0].message.find("again after 1 idle requeue(s)"), std::string::npos)
      << stop[0].message;
  // Under warn nothing changes: a warning, no stop.
  b.attempts[0].policy = model::IdlePolicy::kWarn;
  auto warn = DecideIdle(b);
  ASSERT_EQ(warn.size(), 1u);
  EXPECT_EQ(warn[0].stop, IdleStep::kNone);
}

TEST(IdleBatchOfTest, TakesTheSnapshotsIdleAttemptsWithoutAStopOrder) {
  model::Snapshot s;
  s.now = Timestamp(Seconds(100000));
  s.idle_threshold_percent = 7;
  s.idle_window = Seconds(120);
  auto running = [&](model::AttemptId id, std::optional<Timestamp> idle, bool stopping) {
    model::RunningAttempt r;
    r.attempt_id = id;
    r.job_id = id + 100;
    r.node_name = "n" + std::to_string(id);
    r.idle_since = idle;
    r.stopping = stopping;
    s.running.push_back(r);
    return &s.running.back();
  };
  running(1, std::nullopt, false);        // busy: left out
  running(2, s.now - Seconds(50), true);  // already ordered to stop: left out
  running(3, s.now - Seconds(300), false);
  auto* four = running(4, s.now - Seconds(10), false);
  four->idle_warned = true;
  four->idle_policy = model::IdlePolicy::kRequeue;
  four->last_checkpoint_at = s.now - Seconds(5);  // a checkpoint to resume from
  const auto b = IdleBatchOf(s);
  EXPECT_EQ(b.now, s.now);
  EXPECT_EQ(b.threshold_percent, 7);
  EXPECT_EQ(b.window, Seconds(120));
  ASSERT_EQ(b.attempts.size(), 2u);
  EXPECT_EQ(b.attempts[0].attempt_id, 3);
  EXPECT_EQ(b.attempts[0].job_id, 103);
  EXPECT_EQ(b.attempts[0].node, "n3");
  EXPECT_EQ(b.attempts[0].idle_since, s.now - Seconds(300));
  EXPECT_FALSE(b.attempts[0].warned);
  EXPECT_FALSE(b.attempts[0].has_checkpoint);
  EXPECT_EQ(b.attempts[0].policy, model::IdlePolicy::kWarn);
  EXPECT_EQ(b.attempts[1].attempt_id, 4);
  EXPECT_TRUE(b.attempts[1].warned);
  EXPECT_TRUE(b.attempts[1].has_checkpoint);
  EXPECT_EQ(b.attempts[1].policy, model::IdlePolicy::kRequeue);
}

model::Pool Pool(const std::string& name, const std::string& type, int mem, double speed,
                 Micros price, model::CapacityKind kind = model::CapacityKind::kOnDemand) {
  model::Pool p;
  p.name = name;
  p.gpu_type = type;
  p.gpu_mem_gb = mem;
  p.speed = speed;
  p.price_per_gpu_hour = price;
  p.kind = kind;
  return p;
}

TEST(RightSizingTest, PeakThatFitsACheaperTypeGivesTheSavingInDollars) {
  // 1 GPU for 4 h on a100 ($3.10/h, speed 2): actual 4 x 3.10 = $12.40. The work is 8
  // reference hours; t4 (speed 1, $0.3875/h) needs 8 h: 8 x 0.3875 = $3.10.
  std::vector<model::Pool> pools = {Pool("a100-od", "a100", 80, 2.0, 3'100'000),
                                    Pool("t4-od", "t4", 16, 1.0, 387'500),
                                    Pool("l4-od", "l4", 24, 1.0, 800'000)};
  model::JobUsage u{1, model::Tolerance::kNone, {{"a100-od", 1, 4 * 3'600'000, 11469}}};
  auto a = AdviseRightSizing(u, pools);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->pool, "t4-od");
  EXPECT_EQ(a->actual, 12'400'000);
  EXPECT_EQ(a->alternative, 3'100'000);
  EXPECT_EQ(a->saving, 9'300'000);
  EXPECT_EQ(a->message,
            "peak 11.2 GB fits t4 (16 GB, pool t4-od): the same run would have cost $3.10 "
            "instead of $12.40");
}

TEST(RightSizingTest, NoAdviceWhenPeakIsUnknownTooBigOrTheSlowerTypeCostsMore) {
  std::vector<model::Pool> pools = {Pool("a100-od", "a100", 80, 2.0, 3'100'000),
                                    Pool("t4-od", "t4", 16, 1.0, 387'500)};
  model::JobUsage unknown{1, model::Tolerance::kNone, {{"a100-od", 1, 3'600'000, std::nullopt}}};
  EXPECT_FALSE(AdviseRightSizing(unknown, pools));
  model::JobUsage big{1, model::Tolerance::kNone, {{"a100-od", 1, 3'600'000, 17 * 1024}}};
  EXPECT_FALSE(AdviseRightSizing(big, pools));
  // t4 at speed 0.1: 20 reference hours take 200 h x $0.3875 = $77.50 > $6.20.
  pools[1].speed = 0.1;
  model::JobUsage slow{1, model::Tolerance::kNone, {{"a100-od", 1, 3'600'000 * 2, 1024}}};
  EXPECT_FALSE(AdviseRightSizing(slow, pools));
}

TEST(RightSizingTest, SpotIsACandidateOnlyForTolerantJobs) {
  std::vector<model::Pool> pools = {Pool("a100-od", "a100", 80, 1.0, 3'000'000),
                                    Pool("t4-spot", "t4", 16, 1.0, 100'000, model::CapacityKind::kSpot)};
  model::JobUsage u{1, model::Tolerance::kNone, {{"a100-od", 2, 3'600'000, 1024}}};
  EXPECT_FALSE(AdviseRightSizing(u, pools));
  u.tolerance = model::Tolerance::kCheckpointed;
  auto a = AdviseRightSizing(u, pools);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->alternative, 200'000);  // 2 GPUs x 1 h x $0.10
}

}  // namespace
}  // namespace frugal::policy
