// SubmitService (decision 0043) on a real PostgreSQL: admission's order and refusals, what
// is stored, and when the engine is kicked. The routes' encoding is the e2e tests' part.
#include "scheduler/service/submit_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <set>
#include <thread>

#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/store_fixture.h"

namespace frugal::service {
namespace {

using namespace std::chrono_literals;

class SubmitServiceTest : public testing::StoreTest {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(StoreTest::SetUp());
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("od", model::CapacityKind::kOnDemand, 3'000'000))
            .ok());
    // Its one node has 8 GPUs: no node holds more.
    ASSERT_TRUE(
        store_->RegisterWorker(testing::A100Node("n1", 8), "od", Seconds(600), std::nullopt).ok());
    // "normal" jobs run at most 2 h; without a max_runtime they get 1 h.
    model::GuardrailSettings g;
    g.runtimes["normal"] = {Seconds(3600), Seconds(7200), std::nullopt};
    ASSERT_TRUE(store_->SetGuardrails(g).ok());
    policy::PolicyConfig config;
    advisor_ = std::make_unique<Advisor>(*store_, config);
    service_ = std::make_unique<SubmitService>(*store_, *advisor_, [this] {
      ++kicks_;
      if (on_kick_) on_kick_();
    });
  }

  static store::SubmitRequest Job(int gpus, std::optional<Seconds> max_runtime = std::nullopt) {
    store::SubmitRequest r;
    r.spec.command = {"true"};
    r.spec.gpus = gpus;
    r.spec.max_runtime = max_runtime;
    return r;
  }
  int Jobs() { return static_cast<int>(store_->ListJobs({})->jobs.size()); }

  std::unique_ptr<Advisor> advisor_;
  std::unique_ptr<SubmitService> service_;
  std::atomic<int> kicks_{0};
  std::function<void()> on_kick_;
};

TEST_F(SubmitServiceTest, ASubmitIsAdmittedStoredAndKicksOnce) {
  auto s = service_->Submit(admin_, Job(4));
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_TRUE(s->result.created);
  // The guardrail's class default was applied before storing.
  EXPECT_EQ(s->result.job.spec.max_runtime, Seconds(3600));
  ASSERT_TRUE(s->quote.recommended.has_value());
  EXPECT_FALSE(s->budget.has_value()) << "the team has no budget";
  EXPECT_EQ(kicks_.load(), 1);
  // A replay of the same key stores nothing and kicks nothing.
  store::SubmitRequest again = Job(4);
  again.idempotency_key = "k";
  again.request_sha256 = "h";
  ASSERT_TRUE(service_->Submit(admin_, again).ok());
  auto replay = service_->Submit(admin_, again);
  ASSERT_TRUE(replay.ok()) << replay.status().ToString();
  EXPECT_FALSE(replay->result.created);
  EXPECT_EQ(kicks_.load(), 2);
  EXPECT_EQ(Jobs(), 2);
}

// Decision 0047: single submits that queue while another is being stored go as one group,
// and each still gets its own answer: its own job, or its own refusal.
TEST_F(SubmitServiceTest, SubmitsThatArriveTogetherAreStoredTogetherEachWithItsOwnAnswer) {
  constexpr int kOthers = 12;
  std::atomic<bool> hold{true};
  // The first submit's kick runs while its thread still leads: hold it there until every
  // other submit is queued behind it.
  std::atomic<bool> first_kick{true};
  on_kick_ = [&] {
    if (first_kick.exchange(false))
      while (hold.load()) std::this_thread::yield();
  };
  std::thread first([&] { ASSERT_TRUE(service_->Submit(admin_, Job(1)).ok()); });
  while (kicks_.load() == 0) std::this_thread::yield();
  std::vector<StatusOr<Submitted>> answers(kOthers, Internal("unanswered"));
  std::vector<std::thread> others;
  for (int i = 0; i < kOthers; ++i) {
    others.emplace_back([&, i] {
      // Request 5 asks for more GPUs than any node has: refused, alone.
      store::SubmitRequest r = Job(i == 5 ? 16 : 1 + i % 4);
      r.spec.name = "task-" + std::to_string(i);
      answers[i] = service_->Submit(admin_, r);
    });
  }
  while (service_->waiting() < kOthers) std::this_thread::yield();
  hold = false;
  first.join();
  for (auto& t : others) t.join();
  std::set<model::JobId> ids;
  for (int i = 0; i < kOthers; ++i) {
    if (i == 5) {
      EXPECT_EQ(answers[i].status().code(), StatusCode::kFailedPrecondition);
      EXPECT_EQ(answers[i].status().field(), "gpus");
      continue;
    }
    ASSERT_TRUE(answers[i].ok()) << i << ": " << answers[i].status().ToString();
    const model::Job& job = answers[i]->result.job;
    EXPECT_TRUE(answers[i]->result.created);
    EXPECT_EQ(job.spec.name, "task-" + std::to_string(i));
    EXPECT_EQ(job.spec.gpus, 1 + i % 4);
    EXPECT_EQ(job.spec.max_runtime, Seconds(3600)) << "the guardrail's default applies";
    EXPECT_EQ(job.state, model::JobState::kPending);
    EXPECT_EQ(job.user, admin_.user);
    ASSERT_TRUE(answers[i]->quote.recommended.has_value());
    // What the reply shows is what was stored.
    auto stored = store_->GetJob(job.id, std::nullopt);
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(stored->job.spec.name, job.spec.name);
    EXPECT_EQ(stored->job.created_at, job.created_at);
    ids.insert(job.id);
  }
  EXPECT_EQ(ids.size(), static_cast<size_t>(kOthers - 1));
  EXPECT_EQ(Jobs(), kOthers);  // the first and the eleven admitted
  // One kick for the first submit and one for the group of the other twelve.
  EXPECT_EQ(kicks_.load(), 2);
}

TEST_F(SubmitServiceTest, RefusalsNameTheirFieldAndStoreNothing) {
  auto too_long =
      service_->Submit(admin_, Job(1, Seconds(3 * 3600)));
  EXPECT_EQ(too_long.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(too_long.status().field(), "max_runtime_seconds");
  // No node of any pool can hold 16 GPUs: refused before it is stored.
  auto too_big = service_->Submit(admin_, Job(16));
  EXPECT_EQ(too_big.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(too_big.status().field(), "gpus");
  EXPECT_EQ(Jobs(), 0);
  EXPECT_EQ(kicks_.load(), 0);
}

TEST_F(SubmitServiceTest, ADryRunQuotesWhatASubmitWouldRefuseAndStoresNothing) {
  store::SubmitRequest r = Job(16);
  auto dry = service_->DryRun(r);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_FALSE(dry->quote.unplaceable.empty());
  EXPECT_EQ(r.spec.max_runtime, Seconds(3600)) << "the request comes back admitted";
  EXPECT_EQ(Jobs(), 0);
  EXPECT_EQ(kicks_.load(), 0);
}

TEST_F(SubmitServiceTest, ABatchIsRefusedWholeNamingTheItem) {
  std::vector<store::SubmitRequest> batch{Job(1), Job(2), Job(1, Seconds(3 * 3600)), Job(1)};
  std::size_t refused = 99;
  auto r = service_->SubmitBatch(admin_, batch, &refused);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused, 2u);
  EXPECT_EQ(Jobs(), 0);
  batch.erase(batch.begin() + 2);
  refused = 99;
  r = service_->SubmitBatch(admin_, batch, &refused);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(refused, 99u);
  EXPECT_EQ(r->items.size(), 3u);
  // 1 + 2 + 1 GPUs for the class default's hour at $3 per GPU-hour.
  EXPECT_EQ(r->expected_cost, 12'000'000);
  EXPECT_EQ(Jobs(), 3);
  EXPECT_EQ(kicks_.load(), 1);
}

TEST_F(SubmitServiceTest, DeadlinesAreJudgedAtAdmissionInDatabaseTime) {
  // The decoder no longer judges deadlines (it had only the API host's clock): admission
  // does, at the time the pools were read in, which is the time the engine plans in.
  const Timestamp host = std::chrono::system_clock::now();
  store::SubmitRequest late = Job(1);
  late.spec.estimate = Seconds(3600);
  late.spec.deadline = host + std::chrono::minutes(30);  // needs an hour
  auto refused = service_->Submit(admin_, late);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().field(), "deadline");
  EXPECT_NE(refused.status().message().find("the earliest feasible deadline is"),
            std::string::npos)
      << refused.status().ToString();
  store::SubmitRequest past = Job(1);
  past.spec.deadline = host - std::chrono::minutes(1);
  EXPECT_EQ(service_->Submit(admin_, past).status().field(), "deadline");
  // A dry run is refused the same way: no quote can meet a deadline already gone.
  EXPECT_EQ(service_->DryRun(past).status().field(), "deadline");
  // Within a batch the refusal names its item.
  std::vector<store::SubmitRequest> batch{Job(1), late};
  std::size_t item = 99;
  EXPECT_EQ(service_->SubmitBatch(admin_, batch, &item).status().field(), "deadline");
  EXPECT_EQ(item, 1u);
  EXPECT_EQ(Jobs(), 0);
  // The time admission ran at is the database's (the test database runs on this host, so
  // the two clocks agree to well within a minute).
  store::SubmitRequest ok = Job(1);
  auto dry = service_->DryRun(ok);
  ASSERT_TRUE(dry.ok()) << dry.status().ToString();
  EXPECT_LT(std::chrono::abs(dry->admitted_at - host), std::chrono::minutes(1));
}

}  // namespace
}  // namespace frugal::service
