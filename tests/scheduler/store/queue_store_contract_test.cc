// The QueueStore port's contract (scheduler/store/queue_store.h), one typed suite run on
// both implementations: PgStore on the test PostgreSQL and MemoryQueueStore
// (tests/testing/memory_queue_store.h). Each backend makes its callers and nodes through
// its own means (PostgreSQL's admin and worker ports, the memory cluster's rows); the cases
// speak only the queue port, and two cross to the cycle port: what the queue stores is
// what the engine's snapshot plans, and a cancel reaches a running attempt.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "common/crypto.h"
#include "scheduler/store/pg/pg_store.h"
#include "tests/testing/memory_cycle_store.h"
#include "tests/testing/memory_queue_store.h"
#include "tests/testing/store_fixture.h"
#include "tests/testing/test_postgres.h"

namespace frugal::store {
namespace {

using model::JobId;
using model::JobState;

class PgBackend {
 public:
  void SetUp() {
    store_ = std::make_unique<PgStore>(testing::TestPostgres::Get().NewDatabase(), 2);
    ASSERT_TRUE(store_->Bootstrap(Sha256Hex("admin")).ok());
    auto admin = store_->Authenticate(Sha256Hex("admin"));
    ASSERT_TRUE(admin.ok()) << admin.status().ToString();
    admin_ = *admin;
    ASSERT_TRUE(
        store_->UpsertPool(testing::A100Pool("a100", model::CapacityKind::kOnDemand, 3'000'000))
            .ok());
  }
  QueueStore& queue() { return *store_; }
  CycleStore& cycle() { return *store_; }
  Principal admin() { return admin_; }
  // A researcher `user` of `team`, the team made on first use.
  Principal Researcher(const std::string& team, const std::string& user) {
    (void)store_->CreateTeam(admin_, team);  // Conflict once it exists
    const std::string hash = Sha256Hex(team + "/" + user);
    auto issued = store_->CreateToken(admin_, team, user, Role::kResearcher, hash);
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
    auto who = store_->Authenticate(hash);
    EXPECT_TRUE(who.ok()) << who.status().ToString();
    return who.ok() ? *who : Principal{};
  }
  model::NodeId AddNode(const std::string& name, int gpus) {
    auto r =
        store_->RegisterWorker(testing::A100Node(name, gpus), "a100", Seconds(3600), std::nullopt);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? r->node_id : 0;
  }

 private:
  std::unique_ptr<PgStore> store_;
  Principal admin_;
};

class MemoryBackend {
 public:
  void SetUp() {
    pool_ = cluster_->AddPool(testing::A100Pool("a100", model::CapacityKind::kOnDemand, 3'000'000));
  }
  QueueStore& queue() { return queue_; }
  CycleStore& cycle() { return cycle_; }
  Principal admin() { return Who(Role::kAdmin, "admin", "admin"); }
  Principal Researcher(const std::string& team, const std::string& user) {
    return Who(Role::kResearcher, team, user);
  }
  model::NodeId AddNode(const std::string& name, int gpus) {
    model::Node n = testing::A100Node(name, gpus);
    n.pool_id = pool_;
    return cluster_->AddNode(n, Seconds(3600));
  }

 private:
  Principal Who(Role role, const std::string& team, const std::string& user) {
    Principal p;
    p.role = role;
    p.team_id = teams_.emplace(team, static_cast<int>(teams_.size()) + 1).first->second;
    p.team = team;
    p.user_id = ++users_;
    p.user = user;
    return p;
  }
  std::shared_ptr<testing::MemoryCluster> cluster_ =
      std::make_shared<testing::MemoryCluster>(Timestamp(std::chrono::hours(24 * 365 * 56)));
  testing::MemoryQueueStore queue_{cluster_};
  testing::MemoryCycleStore cycle_{cluster_, "scheduler-1"};
  model::PoolId pool_ = 0;
  std::map<std::string, model::TeamId> teams_;
  model::UserId users_ = 0;
};

template <typename Backend>
class QueueStoreContractTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NO_FATAL_FAILURE(b_.SetUp());
    admin_ = b_.admin();
  }
  QueueStore& queue() { return b_.queue(); }
  // A one-GPU job named `name`; with `key`, the request's hash is `sha`.
  static SubmitRequest Request(const std::string& name, std::optional<std::string> key = {},
                               const std::string& sha = "sha-1") {
    SubmitRequest r;
    r.spec.name = name;
    r.spec.command = {"python", "train.py"};
    r.idempotency_key = std::move(key);
    r.request_sha256 = sha;
    return r;
  }
  JobId Submit(const Principal& who, const SubmitRequest& r) {
    auto res = queue().Submit(who, r);
    EXPECT_TRUE(res.ok()) << res.status().ToString();
    EXPECT_TRUE(res.ok() && res->created);
    return res.ok() ? res->job.id : 0;
  }
  JobId Submit(const std::string& name) { return Submit(admin_, Request(name)); }
  std::vector<JobId> Ids(JobFilter f) {
    auto page = queue().ListJobs(f);
    EXPECT_TRUE(page.ok()) << page.status().ToString();
    std::vector<JobId> out;
    if (page.ok()) {
      for (const auto& j : page->jobs) out.push_back(j.id);
    }
    return out;
  }
  std::vector<JobId> AllIds() { return Ids({}); }

  Backend b_;
  Principal admin_;
};

using Backends = ::testing::Types<PgBackend, MemoryBackend>;
class BackendNames {
 public:
  template <typename T>
  static std::string GetName(int) {
    return std::is_same_v<T, PgBackend> ? "Postgres" : "Memory";
  }
};
TYPED_TEST_SUITE(QueueStoreContractTest, Backends, BackendNames);

TYPED_TEST(QueueStoreContractTest, SubmitStoresAPendingJobWithItsSpec) {
  SubmitRequest r = this->Request("train");
  r.spec.gpus = 2;
  r.spec.priority = "high";
  r.spec.env = {{"SEED", "7"}};
  r.spec.labels = {{"sweep", "lr"}};
  r.spec.project = "vision";
  r.spec.max_attempts = 5;
  auto res = this->queue().Submit(this->admin_, r);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_TRUE(res->created);
  const model::Job& j = res->job;
  EXPECT_NE(j.id, 0);
  EXPECT_EQ(j.state, JobState::kPending);
  EXPECT_EQ(j.reason, "");
  EXPECT_FALSE(j.cancel_requested);
  EXPECT_EQ(j.team, "admin");
  EXPECT_EQ(j.user, "admin");
  EXPECT_EQ(j.spec.name, "train");
  EXPECT_EQ(j.spec.command, (std::vector<std::string>{"python", "train.py"}));
  EXPECT_EQ(j.spec.gpus, 2);
  EXPECT_EQ(j.spec.priority, "high");
  EXPECT_EQ(j.spec.env, r.spec.env);
  EXPECT_EQ(j.spec.labels, r.spec.labels);
  EXPECT_EQ(j.spec.project, "vision");
  EXPECT_EQ(j.spec.max_attempts, 5);
  EXPECT_FALSE(j.array_id.has_value());
  auto d = this->queue().GetJob(j.id, std::nullopt);
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->job.spec.env, r.spec.env);
  EXPECT_EQ(d->job.state, JobState::kPending);
  EXPECT_TRUE(d->attempts.empty());
  EXPECT_FALSE(d->latest_checkpoint.has_value());
  ASSERT_EQ(d->events.size(), 1u);
  EXPECT_EQ(d->events[0].kind, "submitted");
  EXPECT_EQ(d->events[0].to_state, "pending");
  EXPECT_EQ(d->events[0].message, "submitted by admin");
  EXPECT_EQ(this->AllIds(), std::vector<JobId>{j.id});
}

TYPED_TEST(QueueStoreContractTest, AKeyReplaysItsJobAndRefusesAnotherRequestInItsTeamOnly) {
  const JobId first = this->Submit(this->admin_, this->Request("a", "key-1", "sha-1"));
  auto again = this->queue().Submit(this->admin_, this->Request("a", "key-1", "sha-1"));
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->job.id, first);
  auto reused = this->queue().Submit(this->admin_, this->Request("b", "key-1", "sha-2"));
  EXPECT_EQ(reused.status().code(), StatusCode::kConflict) << reused.status().ToString();
  // Another team's key of the same name is its own.
  const Principal alice = this->b_.Researcher("vision", "alice");
  const JobId theirs = this->Submit(alice, this->Request("b", "key-1", "sha-2"));
  EXPECT_NE(theirs, first);
  EXPECT_EQ(this->AllIds(), (std::vector<JobId>{theirs, first}));
}

TYPED_TEST(QueueStoreContractTest, AnApprovalReasonHoldsTheJob) {
  SubmitRequest r = this->Request("big");
  r.approval_reason = "held: awaiting approval (64 GPUs)";
  auto res = this->queue().Submit(this->admin_, r);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->job.state, JobState::kHeld);
  EXPECT_EQ(res->job.reason, "held: awaiting approval (64 GPUs)");
}

TYPED_TEST(QueueStoreContractTest, DependenciesMustNameJobsTheCallerCanSee) {
  const Principal alice = this->b_.Researcher("vision", "alice");
  const JobId admins = this->Submit("admins");
  const JobId hers = this->Submit(alice, this->Request("hers"));
  SubmitRequest missing = this->Request("orphan");
  missing.spec.after = {hers + 1000};
  auto refused = this->queue().Submit(alice, missing);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().field(), "after");
  SubmitRequest other_team = this->Request("peeking");
  other_team.spec.after_any = {admins};
  EXPECT_EQ(this->queue().Submit(alice, other_team).status().code(),
            StatusCode::kFailedPrecondition)
      << "a researcher sees her own team's jobs only";
  EXPECT_EQ(this->AllIds(), (std::vector<JobId>{hers, admins})) << "nothing refused was stored";
  // An admin may depend on any team's job; the job stores both kinds.
  SubmitRequest child = this->Request("child");
  child.spec.after = {hers};
  child.spec.after_any = {admins};
  auto res = this->queue().Submit(this->admin_, child);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_EQ(res->job.state, JobState::kPending);
  EXPECT_EQ(res->job.spec.after, std::vector<JobId>{hers});
  EXPECT_EQ(res->job.spec.after_any, std::vector<JobId>{admins});
}

TYPED_TEST(QueueStoreContractTest, ABatchIsStoredInOrderAndReplaysItsKeys) {
  std::vector<SubmitRequest> batch = {this->Request("a", "k-a"), this->Request("b"),
                                      this->Request("c", "k-c")};
  batch[1].approval_reason = "held: approval";
  auto items = this->queue().SubmitBatch(this->admin_, batch);
  ASSERT_TRUE(items.ok()) << items.status().ToString();
  ASSERT_EQ(items->size(), 3u);
  EXPECT_TRUE((*items)[0].created && (*items)[1].created && (*items)[2].created);
  EXPECT_LT((*items)[0].id, (*items)[1].id);
  EXPECT_LT((*items)[1].id, (*items)[2].id);
  EXPECT_EQ((*items)[0].state, JobState::kPending);
  EXPECT_EQ((*items)[1].state, JobState::kHeld);
  auto again = this->queue().SubmitBatch(this->admin_, {batch[2], this->Request("d")});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  ASSERT_EQ(again->size(), 2u);
  EXPECT_FALSE((*again)[0].created);
  EXPECT_EQ((*again)[0].id, (*items)[2].id);
  EXPECT_TRUE((*again)[1].created);
  auto single = this->queue().Submit(this->admin_, this->Request("a", "k-a"));
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(single->created) << "a batch's key is the team's, as a single submit's";
  EXPECT_EQ(single->job.id, (*items)[0].id);
  EXPECT_EQ(this->queue().SubmitBatch(this->admin_, {}).value().size(), 0u);
}

// Decision 0047: a group of single submits is stored as Submit stores each request.
TYPED_TEST(QueueStoreContractTest, ManySubmitsAreStoredAsSubmitStoresEach) {
  SubmitRequest held = this->Request("held");
  held.approval_reason = "held: approval";
  SubmitRequest labelled = this->Request("labelled");
  labelled.spec.labels = {{"sweep", "lr"}};
  labelled.spec.env = {{"SEED", "7"}};
  labelled.spec.priority = "high";
  const std::vector<SubmitRequest> reqs = {this->Request("plain"), held, labelled};
  auto many = this->queue().SubmitMany(this->admin_, reqs);
  ASSERT_TRUE(many.ok()) << many.status().ToString();
  ASSERT_EQ(many->size(), 3u);
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    const model::Job& got = (*many)[i].job;
    EXPECT_TRUE((*many)[i].created);
    // The same request alone, for comparison.
    auto alone = this->queue().Submit(this->admin_, reqs[i]);
    ASSERT_TRUE(alone.ok()) << alone.status().ToString();
    const model::Job& want = alone->job;
    EXPECT_EQ(got.spec.name, want.spec.name);
    EXPECT_EQ(got.spec.command, want.spec.command);
    EXPECT_EQ(got.spec.env, want.spec.env);
    EXPECT_EQ(got.spec.labels, want.spec.labels);
    EXPECT_EQ(got.spec.priority, want.spec.priority);
    EXPECT_EQ(got.state, want.state) << got.spec.name;
    EXPECT_EQ(got.reason, want.reason) << got.spec.name;
    EXPECT_EQ(got.team, want.team);
    EXPECT_EQ(got.user, want.user);
    // What it returned is what the store holds.
    auto stored = this->queue().GetJob(got.id, std::nullopt);
    ASSERT_TRUE(stored.ok()) << stored.status().ToString();
    EXPECT_EQ(stored->job.spec.name, got.spec.name);
    EXPECT_EQ(stored->job.state, got.state);
    EXPECT_EQ(stored->job.created_at, got.created_at);
    auto alone_stored = this->queue().GetJob(want.id, std::nullopt);
    ASSERT_TRUE(alone_stored.ok());
    ASSERT_FALSE(stored->events.empty());
    ASSERT_FALSE(alone_stored->events.empty());
    EXPECT_EQ(stored->events.front().kind, "submitted");
    EXPECT_EQ(stored->events.front().to_state, alone_stored->events.front().to_state);
    EXPECT_EQ(stored->events.front().message, alone_stored->events.front().message);
  }
  EXPECT_LT((*many)[0].job.id, (*many)[1].job.id);
  EXPECT_LT((*many)[1].job.id, (*many)[2].job.id);
  EXPECT_EQ((*many)[1].job.state, JobState::kHeld);
  // Keys and dependencies keep Submit's own path: refused whole, nothing stored.
  const auto before = this->AllIds();
  EXPECT_EQ(this->queue()
                .SubmitMany(this->admin_, {this->Request("x"), this->Request("k", "k-1")})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  SubmitRequest child = this->Request("child");
  child.spec.after = {(*many)[0].job.id};
  EXPECT_EQ(this->queue().SubmitMany(this->admin_, {child}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(this->AllIds(), before);
}

TYPED_TEST(QueueStoreContractTest, ABatchWithOneBadItemStoresNone) {
  const JobId earlier = this->Submit(this->admin_, this->Request("earlier", "k-1", "sha-1"));
  SubmitRequest bad_priority = this->Request("bad");
  bad_priority.spec.priority = "urgent";
  SubmitRequest missing_dep = this->Request("orphan");
  missing_dep.spec.after = {earlier + 1000};
  const std::vector<std::pair<std::vector<SubmitRequest>, StatusCode>> cases = {
      {{this->Request("new-1"), this->Request("reuse", "k-1", "sha-2")}, StatusCode::kConflict},
      {{this->Request("new-2"), bad_priority}, StatusCode::kInvalidArgument},
      {{this->Request("new-3"), missing_dep}, StatusCode::kFailedPrecondition},
      {{this->Request("x", "k-2"), this->Request("y", "k-2")}, StatusCode::kInvalidArgument},
  };
  for (const auto& [batch, code] : cases) {
    auto res = this->queue().SubmitBatch(this->admin_, batch);
    EXPECT_EQ(res.status().code(), code)
        << batch.back().spec.name << ": " << res.status().ToString();
  }
  EXPECT_EQ(this->AllIds(), std::vector<JobId>{earlier});
}

// Indices 0, 2, 4 of one spec, with a key.
ArrayRequest Sweep(const std::string& key = "sweep-1", const std::string& sha = "sha-1") {
  ArrayRequest a;
  a.task.spec.name = "sweep";
  a.task.spec.command = {"python", "sweep.py"};
  a.task.spec.env = {{"SEED", "7"}};
  a.task.idempotency_key = key;
  a.task.request_sha256 = sha;
  a.first = 0;
  a.last = 4;
  a.step = 2;
  return a;
}

TYPED_TEST(QueueStoreContractTest, AnArraysTasksCarryTheirIndex) {
  auto res = this->queue().SubmitArray(this->admin_, Sweep());
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_TRUE(res->created);
  const ArraySummary& a = res->array;
  EXPECT_EQ(a.task_count, 3);
  EXPECT_EQ(a.name, "sweep");
  EXPECT_EQ(a.team, "admin");
  EXPECT_EQ(a.states, (std::map<std::string, int>{{"pending", 3}}));
  EXPECT_EQ(a.cost, 0);
  auto tasks = this->queue().ArrayTasks({a.id}, std::nullopt);
  ASSERT_TRUE(tasks.ok()) << tasks.status().ToString();
  ASSERT_EQ(tasks->size(), 3u);
  EXPECT_EQ(a.first_job, tasks->front());
  EXPECT_EQ(a.last_job, tasks->back());
  const int indices[] = {0, 2, 4};
  for (int i = 0; i < 3; ++i) {
    auto d = this->queue().GetJob((*tasks)[i], std::nullopt);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->job.array_id, a.id);
    EXPECT_EQ(d->job.array_index, indices[i]);
    EXPECT_EQ(d->job.spec.env.at("FRUGAL_ARRAY_ID"), std::to_string(a.id));
    EXPECT_EQ(d->job.spec.env.at("FRUGAL_ARRAY_INDEX"), std::to_string(indices[i]));
    EXPECT_EQ(d->job.spec.env.at("SEED"), "7");
  }
  const JobId outside = this->Submit("outside");
  JobFilter f;
  f.array = a.id;
  EXPECT_EQ(this->Ids(f), (std::vector<JobId>{(*tasks)[2], (*tasks)[1], (*tasks)[0]}));
  EXPECT_EQ(this->AllIds().front(), outside);
}

TYPED_TEST(QueueStoreContractTest, AnArrayReplaysItsKeyAndIsHiddenFromOtherTeams) {
  auto first = this->queue().SubmitArray(this->admin_, Sweep());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::int64_t id = first->array.id;
  auto again = this->queue().SubmitArray(this->admin_, Sweep());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->array.id, id);
  EXPECT_EQ(this->AllIds().size(), 3u) << "a replay stores no tasks";
  EXPECT_EQ(this->queue().SubmitArray(this->admin_, Sweep("sweep-1", "sha-2")).status().code(),
            StatusCode::kConflict);
  const Principal alice = this->b_.Researcher("vision", "alice");
  EXPECT_EQ(this->queue().GetArray(id, alice.team_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->queue().CancelArray(id, alice.team_id, "alice").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(this->queue().ArrayTasks({id}, alice.team_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->queue().GetArray(id + 1000, std::nullopt).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(this->queue().GetArray(id, this->admin_.team_id).ok());
  auto hers = this->queue().SubmitArray(alice, Sweep());
  ASSERT_TRUE(hers.ok()) << hers.status().ToString();
  EXPECT_TRUE(hers->created) << "her team's key is its own";
  EXPECT_EQ(hers->array.team, "vision");
}

TYPED_TEST(QueueStoreContractTest, CancelArrayEndsEveryTaskNotEndedOnce) {
  auto res = this->queue().SubmitArray(this->admin_, Sweep());
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  const std::int64_t id = res->array.id;
  const JobId first_task = res->array.first_job;
  ASSERT_TRUE(this->queue().CancelJob(first_task, std::nullopt, "admin").ok());
  auto cancelled = this->queue().CancelArray(id, std::nullopt, "admin");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(*cancelled, 2) << "the task cancelled already is not counted";
  auto a = this->queue().GetArray(id, std::nullopt);
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->states, (std::map<std::string, int>{{"cancelled", 3}}));
  EXPECT_EQ(this->queue().CancelArray(id, std::nullopt, "admin").value(), 0);
}

TYPED_TEST(QueueStoreContractTest, AnArrayAfterAnotherWaitsTaskByTask) {
  auto stage1 = this->queue().SubmitArray(this->admin_, Sweep("stage-1"));
  ASSERT_TRUE(stage1.ok()) << stage1.status().ToString();
  ArrayRequest next = Sweep("stage-2");
  next.first = 2;
  next.last = 6;  // 2 and 4 have a partner; 6 does not
  next.after_array_index = stage1->array.id;
  auto stage2 = this->queue().SubmitArray(this->admin_, next);
  ASSERT_TRUE(stage2.ok()) << stage2.status().ToString();
  auto one = this->queue().ArrayTasks({stage1->array.id}, std::nullopt).value();
  auto two = this->queue().ArrayTasks({stage2->array.id}, std::nullopt).value();
  ASSERT_EQ(two.size(), 3u);
  EXPECT_EQ(this->queue().GetJob(two[0], std::nullopt)->job.spec.after, std::vector<JobId>{one[1]});
  EXPECT_EQ(this->queue().GetJob(two[1], std::nullopt)->job.spec.after, std::vector<JobId>{one[2]});
  EXPECT_TRUE(this->queue().GetJob(two[2], std::nullopt)->job.spec.after.empty());
  auto both = this->queue().ArrayTasks({stage1->array.id, stage2->array.id}, std::nullopt);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->size(), 6u);
  ArrayRequest dangling = Sweep("stage-3");
  dangling.after_array_index = stage2->array.id + 1000;
  auto refused = this->queue().SubmitArray(this->admin_, dangling);
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(refused.status().field(), "after_array_index");
  EXPECT_EQ(this->AllIds().size(), 6u) << "nothing refused was stored";
}

TYPED_TEST(QueueStoreContractTest, ArrayIndicesOutOfShapeAreRefused) {
  ArrayRequest backwards = Sweep();
  backwards.first = 5;
  backwards.last = 1;
  ArrayRequest too_many = Sweep();
  too_many.last = kMaxArrayTasks;
  too_many.step = 1;
  for (const ArrayRequest& r : {backwards, too_many}) {
    auto res = this->queue().SubmitArray(this->admin_, r);
    EXPECT_EQ(res.status().code(), StatusCode::kInvalidArgument) << res.status().ToString();
    EXPECT_EQ(res.status().field(), "array");
  }
  EXPECT_TRUE(this->AllIds().empty());
}

TYPED_TEST(QueueStoreContractTest, ListJobsIsNewestFirstAndEachFilterNarrows) {
  const Principal alice = this->b_.Researcher("vision", "alice");
  SubmitRequest labelled = this->Request("labelled");
  labelled.spec.labels = {{"sweep", "lr"}, {"stage", "1"}};
  const JobId a = this->Submit(this->admin_, labelled);
  const JobId b = this->Submit(alice, this->Request("hers"));
  const JobId c = this->Submit("cancelled");
  ASSERT_TRUE(this->queue().CancelJob(c, std::nullopt, "admin").ok());
  EXPECT_EQ(this->AllIds(), (std::vector<JobId>{c, b, a}));
  JobFilter f;
  f.state = JobState::kPending;
  EXPECT_EQ(this->Ids(f), (std::vector<JobId>{b, a}));
  f = {};
  f.label = {"sweep", "lr"};
  EXPECT_EQ(this->Ids(f), std::vector<JobId>{a});
  f.label = {"sweep", "bs"};
  EXPECT_TRUE(this->Ids(f).empty());
  f = {};
  f.visible_team = alice.team_id;
  EXPECT_EQ(this->Ids(f), std::vector<JobId>{b});
  f = {};
  f.team = "admin";
  EXPECT_EQ(this->Ids(f), (std::vector<JobId>{c, a}));
  f = {};
  f.user = "alice";
  EXPECT_EQ(this->Ids(f), std::vector<JobId>{b});
}

TYPED_TEST(QueueStoreContractTest, ListJobsPagesWithItsCursor) {
  std::vector<JobId> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(this->Submit("job-" + std::to_string(i)));
  JobFilter f;
  f.limit = 2;
  std::vector<std::vector<JobId>> pages;
  for (int guard = 0; guard < 5; ++guard) {
    auto page = this->queue().ListJobs(f);
    ASSERT_TRUE(page.ok()) << page.status().ToString();
    pages.emplace_back();
    for (const auto& j : page->jobs) pages.back().push_back(j.id);
    if (!page->next_cursor) break;
    EXPECT_EQ(*page->next_cursor, page->jobs.back().id);
    f.before = page->next_cursor;
  }
  EXPECT_EQ(pages, (std::vector<std::vector<JobId>>{{ids[4], ids[3]}, {ids[2], ids[1]}, {ids[0]}}));
  f = {};
  f.limit = 5;
  auto whole = this->queue().ListJobs(f);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->jobs.size(), 5u);
  EXPECT_FALSE(whole->next_cursor.has_value()) << "a page that holds the rest is the last";
}

TYPED_TEST(QueueStoreContractTest, GetJobIsNotFoundOutsideTheCallersTeam) {
  const Principal alice = this->b_.Researcher("vision", "alice");
  const JobId job = this->Submit("admins");
  EXPECT_EQ(this->queue().GetJob(job, alice.team_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(this->queue().GetJob(job + 1000, std::nullopt).status().code(), StatusCode::kNotFound);
  auto seen = this->queue().GetJob(job, this->admin_.team_id);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_EQ(seen->job.id, job);
}

TYPED_TEST(QueueStoreContractTest, CancelEndsAWaitingJobOnceAndOnlyInItsTeam) {
  const Principal alice = this->b_.Researcher("vision", "alice");
  const JobId pending = this->Submit(alice, this->Request("pending"));
  SubmitRequest approval = this->Request("held");
  approval.approval_reason = "held: approval";
  const JobId held = this->Submit(alice, approval);
  EXPECT_EQ(this->queue().CancelJob(pending, this->admin_.team_id, "admin").status().code(),
            StatusCode::kNotFound);
  for (JobId id : {pending, held}) {
    auto job = this->queue().CancelJob(id, alice.team_id, "alice");
    ASSERT_TRUE(job.ok()) << job.status().ToString();
    EXPECT_EQ(job->state, JobState::kCancelled);
    EXPECT_EQ(job->reason, "cancelled by alice");
    EXPECT_TRUE(job->cancel_requested);
    EXPECT_TRUE(job->finished_at.has_value());
    EXPECT_EQ(this->queue().CancelJob(id, alice.team_id, "alice").status().code(),
              StatusCode::kConflict)
        << "it has ended";
  }
  auto d = this->queue().GetJob(pending, std::nullopt);
  ASSERT_TRUE(d.ok());
  ASSERT_EQ(d->events.size(), 2u);
  EXPECT_EQ(d->events[1].kind, "state_changed");
  EXPECT_EQ(d->events[1].from_state, "pending");
  EXPECT_EQ(d->events[1].to_state, "cancelled");
  EXPECT_EQ(d->events[1].message, "cancelled by alice");
}

// Pending jobs ahead are counted over the whole queue, by class, whichever the team.
TYPED_TEST(QueueStoreContractTest, PendingAheadCountsTheWholeQueueByClass) {
  const Principal alice = this->b_.Researcher("vision", "alice");
  const Principal bob = this->b_.Researcher("speech", "bob");
  auto req = [&](const std::string& name, const std::string& priority) {
    SubmitRequest r = this->Request(name);
    r.spec.priority = priority;
    return r;
  };
  for (int i = 0; i < 3; ++i) this->Submit(bob, req("h" + std::to_string(i), "high"));
  const JobId mine = this->Submit(alice, req("mine", "normal"));
  this->Submit(bob, req("n", "normal"));
  this->Submit(alice, req("low", "low"));
  auto ahead = this->queue().PendingAhead(mine);
  ASSERT_TRUE(ahead.ok()) << ahead.status().ToString();
  EXPECT_EQ(ahead->higher_pending, 3);      // bob's high jobs, whichever team
  EXPECT_EQ(ahead->same_class_pending, 1);  // bob's normal one; the low one is behind
  ASSERT_TRUE(this->queue().CancelJob(mine, std::nullopt, "alice").ok());
  EXPECT_EQ(this->queue().PendingAhead(mine).status().code(), StatusCode::kNotFound);
}

// Across ports: what the queue stores is what the cycle plans. Held, cancelled and
// throttled jobs are not in the snapshot; a dependency still open is its waiting_for.
TYPED_TEST(QueueStoreContractTest, TheCyclesSnapshotPlansWhatTheQueueStored) {
  SubmitRequest big = this->Request("big");
  big.spec.gpus = 4;
  big.spec.priority = "high";
  const JobId parent = this->Submit(this->admin_, big);
  SubmitRequest child = this->Request("child");
  child.spec.after = {parent};
  const JobId waiting = this->Submit(this->admin_, child);
  SubmitRequest approval = this->Request("held");
  approval.approval_reason = "held: approval";
  this->Submit(this->admin_, approval);
  ASSERT_TRUE(this->queue().CancelJob(this->Submit("gone"), std::nullopt, "admin").ok());
  ArrayRequest throttled = Sweep();
  throttled.max_running = 1;
  auto array = this->queue().SubmitArray(this->admin_, throttled);
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  const std::string throttle_reason =
      "waiting: array " + std::to_string(array->array.id) + " runs at most 1 task(s) at once";
  EXPECT_EQ(this->queue().GetJob(array->array.last_job, std::nullopt)->job.reason, throttle_reason);

  auto s = this->b_.cycle().LoadSnapshot({100, 100});
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  ASSERT_EQ(s->pending.size(), 3u);  // claim order: the high one first
  EXPECT_EQ(s->pending[0].id, parent);
  EXPECT_EQ(s->pending[0].gpus, 4);
  EXPECT_EQ(s->pending[0].priority_rank, 1);
  EXPECT_TRUE(s->pending[0].waiting_for.empty());
  EXPECT_EQ(s->pending[1].id, waiting);
  EXPECT_EQ(s->pending[1].waiting_for, std::vector<JobId>{parent});
  EXPECT_EQ(s->pending[2].id, array->array.first_job) << "one task of the throttled array";
  EXPECT_EQ(s->pending[2].reason, throttle_reason);

  // The parent cancelled: the child no longer waits, it has a failed dependency.
  ASSERT_TRUE(this->queue().CancelJob(parent, std::nullopt, "admin").ok());
  s = this->b_.cycle().LoadSnapshot({100, 100});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->pending.size(), 2u);
  EXPECT_EQ(s->pending[0].id, waiting);
  EXPECT_TRUE(s->pending[0].waiting_for.empty());
  EXPECT_EQ(s->pending[0].failed_dependency, parent);
}

// Across ports: a cancel of a running job is a stop order the snapshot shows.
TYPED_TEST(QueueStoreContractTest, CancellingARunningJobAsksItToStop) {
  auto lead = this->b_.cycle().TryLeadership(std::chrono::hours(1));
  ASSERT_TRUE(lead.ok() && lead->leader) << lead.status().ToString();
  const model::NodeId node = this->b_.AddNode("n1", 8);
  const JobId job = this->Submit("running");
  model::Plan plan;
  plan.assignments.push_back({job, node, 1, "placed on n1", 0});
  auto applied = this->b_.cycle().ApplyPlan(plan);
  ASSERT_TRUE(applied.ok()) << applied.status().ToString();
  ASSERT_EQ(applied->started, 1);
  auto d = this->queue().GetJob(job, std::nullopt);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->job.state, JobState::kRunning);
  EXPECT_EQ(d->job.attempts, 1);
  EXPECT_TRUE(d->job.started_at.has_value());
  ASSERT_EQ(d->attempts.size(), 1u);
  EXPECT_EQ(d->attempts[0].node, "n1");
  EXPECT_EQ(d->attempts[0].pool, "a100");
  EXPECT_EQ(d->attempts[0].number, 1);
  EXPECT_FALSE(d->attempts[0].ended_at.has_value());

  auto cancelled = this->queue().CancelJob(job, std::nullopt, "admin");
  ASSERT_TRUE(cancelled.ok()) << cancelled.status().ToString();
  EXPECT_EQ(cancelled->state, JobState::kRunning);
  EXPECT_EQ(cancelled->reason, "stopping: cancel requested");
  EXPECT_TRUE(cancelled->cancel_requested);
  EXPECT_FALSE(cancelled->finished_at.has_value());
  auto twice = this->queue().CancelJob(job, std::nullopt, "admin");
  ASSERT_TRUE(twice.ok()) << "asking a running job to stop twice is not an error";
  EXPECT_EQ(twice->state, JobState::kRunning);
  auto s = this->b_.cycle().LoadSnapshot({100, 100});
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->running.size(), 1u);
  EXPECT_EQ(s->running[0].job_id, job);
  EXPECT_TRUE(s->running[0].stopping);
}

}  // namespace
}  // namespace frugal::store
