// PgStore against a real PostgreSQL (one database per test).
#include "scheduler/store/pg/pg_store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/crypto.h"
#include "scheduler/store/pg/pg_conn.h"
#include "tests/testing/store_fixture.h"
#include "tests/testing/test_postgres.h"

namespace frugal::store {
namespace {

class PgStoreTest : public testing::StoreTest {
 protected:
  Principal Login(const IssuedToken&, const std::string& token) {
    auto p = store_->Authenticate(Sha256Hex(token));
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return *p;
  }

  Principal Researcher(const std::string& team, const std::string& user) {
    (void)store_->CreateTeam(team);
    const std::string token = "tok-" + team + "-" + user;
    auto issued = store_->CreateToken(team, user, Role::kResearcher, Sha256Hex(token));
    EXPECT_TRUE(issued.ok()) << issued.status().ToString();
    return Login(*issued, token);
  }

  SubmitRequest Req(const std::string& name, std::optional<std::string> key = std::nullopt) {
    SubmitRequest r;
    r.spec.name = name;
    r.spec.command = {"echo", name};
    r.spec.labels = {{"exp", "a"}};
    r.idempotency_key = std::move(key);
    r.request_sha256 = Sha256Hex(name);
    return r;
  }
};

TEST_F(PgStoreTest, SubmitStoresEveryFieldAndAnEvent) {
  Principal alice = Researcher("vision", "alice");
  SubmitRequest r = Req("train");
  r.spec.gpus = 4;
  r.spec.gpu_types = {"a100"};
  r.spec.env = {{"LR", "0.1"}};
  r.spec.deadline = *ParseRfc3339("2030-01-01T00:00:00Z");
  r.spec.estimate = Seconds(3600);
  r.spec.tolerance = model::Tolerance::kCheckpointed;
  auto res = store_->Submit(alice, r);
  ASSERT_TRUE(res.ok()) << res.status().ToString();
  EXPECT_TRUE(res->created);
  auto d = store_->GetJob(res->job.id, alice.team_id);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->job.team, "vision");
  EXPECT_EQ(d->job.user, "alice");
  EXPECT_EQ(d->job.spec.gpus, 4);
  EXPECT_EQ(d->job.spec.gpu_types, std::vector<std::string>{"a100"});
  EXPECT_EQ(d->job.spec.env.at("LR"), "0.1");
  EXPECT_EQ(FormatRfc3339(*d->job.spec.deadline), "2030-01-01T00:00:00Z");
  EXPECT_EQ(d->job.spec.tolerance, model::Tolerance::kCheckpointed);
  EXPECT_EQ(d->job.state, model::JobState::kPending);
  ASSERT_EQ(d->events.size(), 1u);
  EXPECT_EQ(d->events[0].kind, "submitted");
  EXPECT_EQ(d->events[0].message, "submitted by alice");
  // The job Submit answers with (the insert's own row) is the job as stored.
  EXPECT_EQ(res->job.team, "vision");
  EXPECT_EQ(res->job.user, "alice");
  EXPECT_EQ(res->job.spec.gpus, 4);
  EXPECT_EQ(res->job.spec.env.at("LR"), "0.1");
  EXPECT_EQ(res->job.state, model::JobState::kPending);
  EXPECT_EQ(res->job.created_at, d->job.created_at);
  EXPECT_EQ(FormatRfc3339(*res->job.spec.deadline), "2030-01-01T00:00:00Z");
}

TEST_F(PgStoreTest, SameIdempotencyKeyGivesTheSameJob) {
  Principal alice = Researcher("vision", "alice");
  auto a = store_->Submit(alice, Req("train", "key-1"));
  auto b = store_->Submit(alice, Req("train", "key-1"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->created);
  EXPECT_FALSE(b->created);
  EXPECT_EQ(a->job.id, b->job.id);
  // A different body under the same key is a conflict, not a second job.
  auto c = store_->Submit(alice, Req("other", "key-1"));
  EXPECT_EQ(c.status().code(), StatusCode::kConflict);
  // Keys are per team.
  Principal bob = Researcher("nlp", "bob");
  auto d = store_->Submit(bob, Req("train", "key-1"));
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->created);
  EXPECT_NE(d->job.id, a->job.id);
}

// The batch INSERT spells every column itself: a job stored by SubmitBatch must be the job
// Submit stores for the same request, field for field.
TEST_F(PgStoreTest, SubmitBatchStoresWhatSubmitStores) {
  Principal alice = Researcher("vision", "alice");
  auto dep = store_->Submit(alice, Req("dep"));
  ASSERT_TRUE(dep.ok());
  SubmitRequest r = Req("full");
  r.spec.project = "p";
  r.spec.working_dir = "/w";
  r.spec.gpus = 2;
  r.spec.gpu_types = {"a100", "h100"};
  r.spec.min_gpu_mem_gb = 40;
  r.spec.env = {{"LR", "0.1"}, {"MSG", "a\"b\\c\x01\n"}};
  // Text the batch's row writer must escape, or hands to nlohmann (decision 0046), and
  // array elements that look like PostgreSQL array syntax.
  r.spec.name = "full \"quoted\" \\ \xc3\xa9";
  r.spec.command = {"/bin/sh", "-c",   "echo \"{a,b}\" NULL\n\tdone \\ \xf0\x9f\x9a\x80",
                    "",        "NULL", "{x}"};
  r.spec.labels = {{"exp", "sweep \"1\""}, {"k", "v"}};
  r.spec.priority = "high";
  r.spec.deadline = *ParseRfc3339("2030-01-01T00:00:00.250Z");
  r.spec.estimate = Seconds(3600);
  r.spec.max_runtime = Seconds(7200);
  r.spec.tolerance = model::Tolerance::kCheckpointed;
  r.spec.checkpoint_interval = Seconds(600);
  r.spec.after = {dep->job.id};
  r.spec.max_attempts = 5;
  SubmitRequest any = Req("any");
  any.spec.after_any = {dep->job.id};
  any.approval_reason = "over the class's GPU limit";
  auto single = store_->Submit(alice, r);
  auto single_any = store_->Submit(alice, any);
  auto batch = store_->SubmitBatch(alice, {r, any});
  ASSERT_TRUE(single.ok() && single_any.ok()) << single.status().ToString();
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ(batch->size(), 2u);
  EXPECT_LT((*batch)[0].id, (*batch)[1].id);
  EXPECT_EQ((*batch)[1].state, model::JobState::kHeld);
  const std::vector<std::pair<model::JobId, model::JobId>> pairs = {{single->job.id, (*batch)[0].id},
                                                      {single_any->job.id, (*batch)[1].id}};
  for (const auto& [a, b] : pairs) {
    auto x = store_->GetJob(a, std::nullopt);
    auto y = store_->GetJob(b, std::nullopt);
    ASSERT_TRUE(x.ok() && y.ok());
    EXPECT_EQ(nlohmann::json(x->job.spec.env), nlohmann::json(y->job.spec.env));
    EXPECT_EQ(x->job.spec.name, y->job.spec.name);
    EXPECT_EQ(x->job.spec.project, y->job.spec.project);
    EXPECT_EQ(x->job.spec.working_dir, y->job.spec.working_dir);
    EXPECT_EQ(x->job.spec.command, y->job.spec.command);
    EXPECT_EQ(x->job.spec.gpus, y->job.spec.gpus);
    EXPECT_EQ(x->job.spec.gpu_types, y->job.spec.gpu_types);
    EXPECT_EQ(x->job.spec.min_gpu_mem_gb, y->job.spec.min_gpu_mem_gb);
    EXPECT_EQ(x->job.spec.priority, y->job.spec.priority);
    EXPECT_EQ(x->job.spec.deadline, y->job.spec.deadline);
    EXPECT_EQ(x->job.spec.estimate, y->job.spec.estimate);
    EXPECT_EQ(x->job.spec.max_runtime, y->job.spec.max_runtime);
    EXPECT_EQ(x->job.spec.tolerance, y->job.spec.tolerance);
    EXPECT_EQ(x->job.spec.checkpoint_interval, y->job.spec.checkpoint_interval);
    EXPECT_EQ(x->job.spec.after, y->job.spec.after);
    EXPECT_EQ(x->job.spec.after_any, y->job.spec.after_any);
    EXPECT_EQ(x->job.spec.labels, y->job.spec.labels);
    EXPECT_EQ(x->job.spec.max_attempts, y->job.spec.max_attempts);
    EXPECT_EQ(x->job.state, y->job.state);
    EXPECT_EQ(x->job.reason, y->job.reason);
    ASSERT_EQ(x->events.size(), 1u);
    ASSERT_EQ(y->events.size(), 1u);
    EXPECT_EQ(x->events[0].message, y->events[0].message);
    EXPECT_EQ(x->events[0].to_state, y->events[0].to_state);
  }
  // A missing dependency anywhere stores nothing.
  SubmitRequest bad = Req("bad");
  bad.spec.after = {999999};
  auto before = store_->ListJobs({});
  EXPECT_EQ(store_->SubmitBatch(alice, {Req("fine"), bad}).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->ListJobs({})->jobs.size(), before->jobs.size());
  // A NUL would cut an array parameter short at the C string's end: refused, nothing stored.
  SubmitRequest nul = Req("nul");
  nul.spec.command = {"/bin/echo", std::string("a\0b", 3)};
  EXPECT_EQ(store_->SubmitBatch(alice, {Req("fine"), nul}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListJobs({})->jobs.size(), before->jobs.size());
}

TEST_F(PgStoreTest, SubmitBatchRetriesByKeyAndRefusesAChangedItem) {
  Principal alice = Researcher("vision", "alice");
  auto first = store_->SubmitBatch(alice, {Req("a", "k#0"), Req("b", "k#1")});
  auto again = store_->SubmitBatch(alice, {Req("a", "k#0"), Req("b", "k#1")});
  ASSERT_TRUE(first.ok() && again.ok()) << again.status().ToString();
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_TRUE((*first)[i].created);
    EXPECT_FALSE((*again)[i].created);
    EXPECT_EQ((*first)[i].id, (*again)[i].id);
  }
  auto changed = store_->SubmitBatch(alice, {Req("a", "k#0"), Req("c", "k#1")});
  EXPECT_EQ(changed.status().code(), StatusCode::kConflict);
  EXPECT_NE(changed.status().message().find("jobs[1]"), std::string::npos);
  auto twice = store_->SubmitBatch(alice, {Req("x", "d"), Req("y", "d")});
  EXPECT_EQ(twice.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(store_->ListJobs({})->jobs.size(), 2u);
}

TEST_F(PgStoreTest, ArrayTasksAreJobsWithTheirIndexAndEnv) {
  Principal alice = Researcher("vision", "alice");
  ArrayRequest a;
  a.task = Req("sweep", "arr-key");
  a.first = 10;
  a.last = 20;
  a.step = 5;
  auto r = store_->SubmitArray(alice, a);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->created);
  EXPECT_EQ(r->array.task_count, 3);
  EXPECT_EQ(r->array.states.at("pending"), 3);
  JobFilter f;
  f.array = r->array.id;
  auto tasks = store_->ListJobs(f);
  ASSERT_TRUE(tasks.ok());
  ASSERT_EQ(tasks->jobs.size(), 3u);
  std::vector<int> indices;
  for (const auto& j : tasks->jobs) {
    EXPECT_EQ(j.array_id, r->array.id);
    indices.push_back(*j.array_index);
    EXPECT_EQ(j.spec.env.at("FRUGAL_ARRAY_INDEX"), std::to_string(*j.array_index));
    EXPECT_EQ(j.spec.env.at("FRUGAL_ARRAY_ID"), std::to_string(r->array.id));
  }
  EXPECT_EQ(indices, (std::vector<int>{20, 15, 10}));  // newest first
  // The same key and request: the same array, nothing new; another request: 409.
  auto again = store_->SubmitArray(alice, a);
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(again->created);
  EXPECT_EQ(again->array.id, r->array.id);
  a.task.request_sha256 = "other";
  EXPECT_EQ(store_->SubmitArray(alice, a).status().code(), StatusCode::kConflict);
  // Stage two waits on the same index of stage one.
  ArrayRequest b;
  b.task = Req("stage2");
  b.first = 15;
  b.last = 25;
  b.step = 5;
  b.after_array_index = r->array.id;
  auto r2 = store_->SubmitArray(alice, b);
  ASSERT_TRUE(r2.ok()) << r2.status().ToString();
  f.array = r2->array.id;
  auto stage2 = store_->ListJobs(f);
  ASSERT_TRUE(stage2.ok());
  ASSERT_EQ(stage2->jobs.size(), 3u);
  for (const auto& j : stage2->jobs) {
    if (*j.array_index == 25) {
      EXPECT_TRUE(j.spec.after.empty()) << "stage one has no task 25";
    } else {
      ASSERT_EQ(j.spec.after.size(), 1u);
      auto dep = store_->GetJob(j.spec.after[0], std::nullopt);
      ASSERT_TRUE(dep.ok()) << j.spec.after[0] << ": " << dep.status().ToString();
      EXPECT_EQ(dep->job.array_index, j.array_index);
    }
  }
  // Another team sees neither the array nor its tasks.
  Principal bob = Researcher("nlp", "bob");
  EXPECT_EQ(store_->GetArray(r->array.id, bob.team_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->CancelArray(r->array.id, bob.team_id, "bob").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(store_->ArrayTasks({r->array.id}, bob.team_id).status().code(), StatusCode::kNotFound);
  // Cancel ends every task that has not, and says how many.
  auto n = store_->CancelArray(r->array.id, alice.team_id, "alice");
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 3);
  auto after = store_->GetArray(r->array.id, alice.team_id);
  EXPECT_EQ(after->states.at("cancelled"), 3);
  EXPECT_EQ(*store_->CancelArray(r->array.id, alice.team_id, "alice"), 0);
}

// `%N`: the snapshot holds at most N minus the running tasks of the array, lowest index
// first, so throttled tasks take none of its places.
TEST_F(PgStoreTest, SnapshotHoldsOnlyAThrottledArraysRoom) {
  Principal alice = Researcher("vision", "alice");
  ArrayRequest a;
  a.task = Req("throttled");
  a.first = 0;
  a.last = 4;
  a.max_running = 2;
  auto r = store_->SubmitArray(alice, a);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto plain = store_->Submit(alice, Req("plain"));
  ASSERT_TRUE(plain.ok());
  auto pending_ids = [&] {
    std::vector<model::JobId> ids;
    auto snap = store_->LoadSnapshot({100, 100});
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    for (const auto& p : snap->pending) ids.push_back(p.id);
    return ids;
  };
  const model::JobId first = r->array.first_job;
  EXPECT_EQ(pending_ids(), (std::vector<model::JobId>{first, first + 1, plain->job.id}));
  auto t = store_->GetJob(first + 2, std::nullopt);
  EXPECT_NE(t->job.reason.find("runs at most 2 task(s) at once"), std::string::npos) << t->job.reason;
  // One task running leaves room for one more.
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE((*conn)->ExecScript("UPDATE jobs SET state = 'running' WHERE id = " +
                                  std::to_string(first)).ok());
  EXPECT_EQ(pending_ids(), (std::vector<model::JobId>{first + 1, plain->job.id}));
  ASSERT_TRUE((*conn)->ExecScript("UPDATE jobs SET state = 'running' WHERE id = " +
                                  std::to_string(first + 1)).ok());
  EXPECT_EQ(pending_ids(), (std::vector<model::JobId>{plain->job.id}));
}

// The snapshot's window is per team (decision 0035): a team that queued first and deep
// does not hide a later team's jobs, and the window keeps claim order (priority, then id).
TEST_F(PgStoreTest, SnapshotReadsEachTeamsHeadOfQueue) {
  Principal alice = Researcher("vision", "alice");
  Principal bob = Researcher("speech", "bob");
  std::vector<model::JobId> vision, speech;
  for (int i = 0; i < 5; ++i) vision.push_back(store_->Submit(alice, Req("v" + std::to_string(i)))->job.id);
  SubmitRequest urgent = Req("v-urgent");
  urgent.spec.priority = "high";
  const model::JobId high = store_->Submit(alice, urgent)->job.id;
  for (int i = 0; i < 3; ++i) speech.push_back(store_->Submit(bob, Req("s" + std::to_string(i)))->job.id);
  auto pending_ids = [&](PendingWindow w) {
    std::vector<model::JobId> ids;
    auto snap = store_->LoadSnapshot(w);
    EXPECT_TRUE(snap.ok()) << snap.status().ToString();
    for (const auto& p : snap->pending) ids.push_back(p.id);
    return ids;
  };
  // Two of each team's: vision's high-priority job first, then by submission.
  EXPECT_EQ(pending_ids({100, 2}),
            (std::vector<model::JobId>{high, vision[0], speech[0], speech[1]}));
  // The cut across teams takes every team's first before any team's second, whatever the
  // claim order (vision's second job is older than speech's first).
  EXPECT_EQ(pending_ids({2, 2}), (std::vector<model::JobId>{high, speech[0]}));
  EXPECT_EQ(pending_ids({3, 2}), (std::vector<model::JobId>{high, vision[0], speech[0]}));
  EXPECT_EQ(pending_ids({100, 100}).size(), 9u);
}

// A pipeline's tail that waits on a dependency does not take the window's places of a job
// that may start: the window holds a team's first jobs that may start and, beside them, its
// first that wait (so their reasons stay current).
TEST_F(PgStoreTest, SnapshotWindowKeepsPlacesForJobsThatMayStart) {
  Principal alice = Researcher("vision", "alice");
  const model::JobId parent = store_->Submit(alice, Req("parent"))->job.id;
  std::vector<model::JobId> children;
  for (int i = 0; i < 3; ++i) {
    SubmitRequest r = Req("child" + std::to_string(i));
    r.spec.after = {parent};
    children.push_back(store_->Submit(alice, r)->job.id);
  }
  const model::JobId free = store_->Submit(alice, Req("free"))->job.id;
  auto snap = store_->LoadSnapshot({100, 2});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  std::vector<model::JobId> ids;
  for (const auto& p : snap->pending) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<model::JobId>{parent, children[0], children[1], free}));
  EXPECT_EQ(snap->pending[1].waiting_for, (std::vector<model::JobId>{parent}));
}

// The window read leaves out the throttle and the waiting part where nothing needs them
// (decision 0048); with both needed at once, each still does its part, and once neither is
// needed the plain read finds the rest.
TEST_F(PgStoreTest, SnapshotWindowWithAThrottledArrayAndAPipeline) {
  Principal alice = Researcher("vision", "alice");
  ArrayRequest a;
  a.task = Req("throttled");
  a.first = 0;
  a.last = 2;
  a.max_running = 1;
  auto arr = store_->SubmitArray(alice, a);
  ASSERT_TRUE(arr.ok()) << arr.status().ToString();
  const model::JobId parent = store_->Submit(alice, Req("parent"))->job.id;
  SubmitRequest child = Req("child");
  child.spec.after = {parent};
  const model::JobId kid = store_->Submit(alice, child)->job.id;
  const model::JobId first = arr->array.first_job;
  auto snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  std::vector<model::JobId> ids;
  for (const auto& p : snap->pending) ids.push_back(p.id);
  EXPECT_EQ(ids, (std::vector<model::JobId>{first, parent, kid}));
  ASSERT_EQ(snap->pending.size(), 3u);
  EXPECT_EQ(snap->pending[2].waiting_for, (std::vector<model::JobId>{parent}));
  // The array and the parent end: nothing is throttled or waits, and the plain read sees
  // the child free to start.
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(
      (*conn)
          ->ExecScript("UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE id <> " +
                       std::to_string(kid))
          .ok());
  ASSERT_TRUE(
      (*conn)
          ->ExecScript("UPDATE jobs SET depends_on = '{}' WHERE id = " + std::to_string(kid))
          .ok());
  snap = store_->LoadSnapshot({100, 100});
  ASSERT_TRUE(snap.ok()) << snap.status().ToString();
  ASSERT_EQ(snap->pending.size(), 1u);
  EXPECT_EQ(snap->pending[0].id, kid);
  EXPECT_TRUE(snap->pending[0].waiting_for.empty());
}

TEST_F(PgStoreTest, ResearchersSeeOnlyTheirTeam) {
  Principal alice = Researcher("vision", "alice");
  Principal bob = Researcher("nlp", "bob");
  auto job = store_->Submit(alice, Req("train"));
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(store_->GetJob(job->job.id, bob.team_id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(store_->CancelJob(job->job.id, bob.team_id, "bob").status().code(),
            StatusCode::kNotFound);
  JobFilter f;
  f.visible_team = bob.team_id;
  EXPECT_TRUE(store_->ListJobs(f)->jobs.empty());
  f.visible_team = std::nullopt;  // admin
  EXPECT_EQ(store_->ListJobs(f)->jobs.size(), 1u);
}

TEST_F(PgStoreTest, ListPagesThroughEveryJobOnce) {
  Principal alice = Researcher("vision", "alice");
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(store_->Submit(alice, Req("j" + std::to_string(i))).ok());
  JobFilter f;
  f.limit = 3;
  std::vector<model::JobId> seen;
  for (int page = 0; page < 10; ++page) {
    auto p = store_->ListJobs(f);
    ASSERT_TRUE(p.ok());
    for (const auto& j : p->jobs) seen.push_back(j.id);
    if (!p->next_cursor) break;
    f.before = p->next_cursor;
  }
  // 7 jobs in pages of 3 + 3 + 1, newest first, no repeats.
  ASSERT_EQ(seen.size(), 7u);
  EXPECT_TRUE(std::is_sorted(seen.rbegin(), seen.rend()));
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
}

TEST_F(PgStoreTest, ListFiltersByStateUserAndLabel) {
  Principal alice = Researcher("vision", "alice");
  Principal carol = Researcher("vision", "carol");
  auto a = store_->Submit(alice, Req("a"));
  SubmitRequest other = Req("b");
  other.spec.labels = {{"exp", "b"}};
  ASSERT_TRUE(store_->Submit(carol, other).ok());
  ASSERT_TRUE(store_->CancelJob(a->job.id, std::nullopt, "admin").ok());
  JobFilter f;
  f.user = "carol";
  EXPECT_EQ(store_->ListJobs(f)->jobs.size(), 1u);
  f = {};
  f.label = std::make_pair("exp", "a");
  EXPECT_EQ(store_->ListJobs(f)->jobs.size(), 1u);
  f = {};
  f.state = model::JobState::kCancelled;
  auto p = store_->ListJobs(f);
  ASSERT_EQ(p->jobs.size(), 1u);
  EXPECT_EQ(p->jobs[0].id, a->job.id);
}

TEST_F(PgStoreTest, CancelEndsPendingJobsAndRefusesEndedOnes) {
  Principal alice = Researcher("vision", "alice");
  auto job = store_->Submit(alice, Req("train"));
  auto c = store_->CancelJob(job->job.id, alice.team_id, "alice");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state, model::JobState::kCancelled);
  EXPECT_TRUE(c->finished_at.has_value());
  EXPECT_EQ(store_->CancelJob(job->job.id, alice.team_id, "alice").status().code(),
            StatusCode::kConflict);
  auto d = store_->GetJob(job->job.id, std::nullopt);
  ASSERT_EQ(d->events.size(), 2u);
  EXPECT_EQ(d->events[1].to_state, "cancelled");
}

TEST_F(PgStoreTest, DependenciesMustExistAndBeVisible) {
  Principal alice = Researcher("vision", "alice");
  Principal bob = Researcher("nlp", "bob");
  auto bobs = store_->Submit(bob, Req("b"));
  SubmitRequest r = Req("a");
  r.spec.after = {bobs->job.id};
  EXPECT_EQ(store_->Submit(alice, r).status().field(), "after");  // another team's job
  r.spec.after = {999999};
  EXPECT_EQ(store_->Submit(alice, r).status().code(), StatusCode::kFailedPrecondition);
}

TEST_F(PgStoreTest, TokensAuthenticateOnlyByHashAndBootstrapRunsOnce) {
  EXPECT_EQ(admin_.role, Role::kAdmin);
  EXPECT_EQ(store_->Authenticate(Sha256Hex("nope")).status().code(),
            StatusCode::kUnauthenticated);
  EXPECT_EQ(store_->Bootstrap(Sha256Hex("second")).status().code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(store_->CreateToken("ghosts", "x", Role::kResearcher, Sha256Hex("t")).status().field(),
            "team");
}

TEST_F(PgStoreTest, EventLogIsAppendOnly) {
  Principal alice = Researcher("vision", "alice");
  ASSERT_TRUE(store_->Submit(alice, Req("train")).ok());
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  EXPECT_FALSE((*conn)->ExecScript("UPDATE job_events SET message = 'rewritten'").ok());
  EXPECT_FALSE((*conn)->ExecScript("DELETE FROM job_events").ok());
  EXPECT_FALSE((*conn)->ExecScript("TRUNCATE job_events CASCADE").ok());
}

TEST_F(PgStoreTest, SchemaRefusesBadRows) {
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  PgConn& c = **conn;
  const std::string team = std::to_string(admin_.team_id), user = std::to_string(admin_.user_id);
  auto insert = [&](const std::string& gpus, const std::string& state) {
    return c.Exec("bad_job_" + gpus + state,
                  "INSERT INTO jobs (team_id, user_id, command, gpus, priority, priority_rank,"
                  " tolerance, state) VALUES ($1, $2, '{x}', $3, 'normal', 2, 'none', $4)",
                  {team, user, gpus, state});
  };
  EXPECT_FALSE(insert("0", "pending").ok());   // GPUs > 0
  EXPECT_FALSE(insert("-1", "pending").ok());
  EXPECT_FALSE(insert("1", "exploded").ok());  // valid states only
  EXPECT_TRUE(insert("1", "pending").ok());
}

// Decision 0059 checks a job's team, user and array, and an event's job, once per statement,
// not by foreign keys: each reference is still refused when it names nothing, in a statement
// of many rows too, and what a key kept in place (the rows named are never deleted, a job's
// owners never change) is refused as well.
TEST_F(PgStoreTest, SchemaRefusesDanglingReferences) {
  Principal alice = Researcher("vision", "alice");
  Principal bob = Researcher("nlp", "bob");
  auto job = store_->Submit(alice, Req("train"));
  ASSERT_TRUE(job.ok());
  auto conn = PgConn::Connect(conninfo_);
  ASSERT_TRUE(conn.ok());
  PgConn& c = **conn;
  const std::string team = std::to_string(alice.team_id), user = std::to_string(alice.user_id);
  auto insert = [&](const std::string& t, const std::string& u) {
    // Three rows in one statement; only the last names (t, u).
    return c.Exec("ref_job_" + t + "_" + u,
                  "INSERT INTO jobs (team_id, user_id, command, gpus, priority, priority_rank,"
                  " tolerance) SELECT CASE WHEN i < 3 THEN $1::bigint ELSE $3::bigint END,"
                  " CASE WHEN i < 3 THEN $2::bigint ELSE $4::bigint END, '{x}', 1, 'normal', 2, 'none'"
                  " FROM generate_series(1, 3) i",
                  {team, user, t, u});
  };
  auto no_team = insert("999999", user);
  ASSERT_FALSE(no_team.ok());
  EXPECT_NE(no_team.status().message().find("team 999999 or user"), std::string::npos)
      << no_team.status().ToString();
  EXPECT_FALSE(insert(team, "999999").ok());
  EXPECT_TRUE(insert(team, user).ok());
  auto no_array = c.Exec("ref_job_array",
                         "INSERT INTO jobs (team_id, user_id, command, gpus, priority,"
                         " priority_rank, tolerance, array_id, array_index)"
                         " VALUES ($1, $2, '{x}', 1, 'normal', 2, 'none', 999999, 0)",
                         {team, user});
  ASSERT_FALSE(no_array.ok());
  EXPECT_NE(no_array.status().message().find("array 999999 does not exist"), std::string::npos)
      << no_array.status().ToString();
  const std::string id = std::to_string(job->job.id);
  auto event = [&](const std::string& job_id) {
    return c.Exec("ref_event_" + job_id,
                  "INSERT INTO job_events (job_id, kind) VALUES ($1, 'noted'), ($2, 'noted')",
                  {id, job_id});
  };
  auto no_job = event("999999");
  ASSERT_FALSE(no_job.ok());
  EXPECT_NE(no_job.status().message().find("job 999999 does not exist"), std::string::npos)
      << no_job.status().ToString();
  EXPECT_TRUE(event(id).ok());
  ArrayRequest sweep;
  sweep.task = Req("sweep");
  sweep.first = 0;
  sweep.last = 1;
  auto array = store_->SubmitArray(alice, sweep);
  ASSERT_TRUE(array.ok()) << array.status().ToString();
  for (const char* sql :
       {"DELETE FROM jobs", "DELETE FROM users", "DELETE FROM teams", "DELETE FROM job_arrays",
        "TRUNCATE jobs CASCADE", "TRUNCATE users CASCADE", "TRUNCATE teams CASCADE",
        "TRUNCATE job_arrays CASCADE"})
    EXPECT_FALSE(c.ExecScript(sql).ok()) << sql;
  EXPECT_FALSE(c.ExecScript("UPDATE jobs SET team_id = " + std::to_string(bob.team_id) +
                            " WHERE id = " + id)
                   .ok());
  EXPECT_FALSE(c.ExecScript("UPDATE jobs SET user_id = " + std::to_string(bob.user_id) +
                            " WHERE id = " + id)
                   .ok());
  EXPECT_FALSE(c.ExecScript("UPDATE jobs SET array_id = " + std::to_string(array->array.id) +
                            ", array_index = 7 WHERE id = " + id)
                   .ok());
  // Writing the same owners back is no change.
  EXPECT_TRUE(c.ExecScript("UPDATE jobs SET team_id = team_id WHERE id = " + id).ok());
  auto count = c.ExecScript("SELECT count(*) FROM jobs WHERE team_id = " + team);
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(count->Int(0, 0), 6);  // the job, three inserted, two tasks
}

// database_url may be a URI as well as key=value pairs (issue 17): options used to be
// appended as "key=value" text, which turned a URI into an unparsable string.
TEST(PgConnTest, ConnectsWithUriAndKeyValueForms) {
  auto& pg = frugal::testing::TestPostgres::Get();
  const std::string db = pg.NewDatabase();
  const std::string name = db.substr(db.find("dbname=") + 7);
  const std::string uri = "postgresql://frugal@/" + name + "?host=" + pg.cluster().socket_dir() +
                          "&port=5432&connect_timeout=3";
  for (const std::string& info : {db, uri}) {
    auto conn = PgConn::Connect(info);
    ASSERT_TRUE(conn.ok()) << info << ": " << conn.status().ToString();
    auto r = (*conn)->ExecScript("SELECT current_database(), current_setting('application_name')");
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->Text(0, 0), name) << info;
    EXPECT_EQ(r->Text(0, 1), "frugal") << info;
  }
  // No JIT on any connection (decision 0025): it compiled for longer than the queries ran.
  auto conn = PgConn::Connect(db);
  ASSERT_TRUE(conn.ok());
  EXPECT_EQ((*conn)->ExecScript("SHOW jit")->Text(0, 0), "off");
  EXPECT_FALSE(PgConn::Connect("postgresql://frugal@/no_such_db?host=" +
                               pg.cluster().socket_dir() + "&port=5432")
                   .ok());
}

}  // namespace
}  // namespace frugal::store

namespace frugal::store {
namespace {

// Decision 0040: tables that changed a lot get fresh planner statistics at the next look,
// not at autovacuum's next visit, and tables that did not change are left alone; decision
// 0048: at once only where the size changed, else after autovacuum's minute.
TEST_F(PgStoreTest, StatisticsAreRefreshedForTablesThatChangedALot) {
  auto c = PgConn::Connect(conninfo_);
  ASSERT_TRUE(c.ok());
  // Only the store may analyze jobs here, whenever autovacuum visits this database.
  ASSERT_TRUE((*c)->ExecScript("ALTER TABLE jobs SET (autovacuum_enabled = false)").ok());
  Principal alice = Researcher("vision", "alice");
  ASSERT_TRUE(store_->SubmitBatch(alice, std::vector<SubmitRequest>(500, Req("sweep"))).ok());
  // A session reports its changes to pg_stat_user_tables about a second after it goes
  // idle: wait for that, with a deadline, rather than for a fixed time.
  auto has_jobs = [](const std::vector<std::string>& t) {
    return std::find(t.begin(), t.end(), "jobs") != t.end();
  };
  bool analyzed = false;
  for (int i = 0; i < 150 && !analyzed; ++i) {
    auto r = store_->RefreshStatistics();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    analyzed = has_jobs(*r);
    if (!analyzed) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_TRUE(analyzed) << "jobs was never analyzed after 500 inserts";
  auto tuples = (*c)->Exec("reltuples", "SELECT reltuples::bigint FROM pg_class WHERE oid = 'jobs'::regclass");
  ASSERT_TRUE(tuples.ok());
  EXPECT_EQ(tuples->Int(0, 0), 500);  // was -1: never analyzed
  // Nothing changed since: a second look leaves jobs alone.
  auto again = store_->RefreshStatistics();
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(has_jobs(*again));

  // Decision 0048: rows that only changed (each of the 500 twice) wait for autovacuum's
  // minute since the last analysis; the table's size is still what its statistics say.
  ASSERT_TRUE((*c)->ExecScript("UPDATE jobs SET reason = 'churn one'").ok());
  ASSERT_TRUE((*c)->ExecScript("UPDATE jobs SET reason = 'churn two'").ok());
  auto mods = [&] {
    auto m = (*c)->Exec("mods",
                        "SELECT n_mod_since_analyze, n_live_tup FROM pg_stat_user_tables"
                        " WHERE relid = 'jobs'::regclass");
    return m.ok() && m->rows() == 1 ? std::make_pair(m->Int(0, 0), m->Int(0, 1))
                                    : std::make_pair(std::int64_t{-1}, std::int64_t{-1});
  };
  for (int i = 0; i < 150 && mods().first < 1000; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(mods().first, 1000) << "the updates never reached pg_stat_user_tables";
  // Both halves hold only within the minute after the analysis above.
  auto analyzed_lately = [&] {
    auto a = (*c)->Exec("lately",
                        "SELECT last_analyze > now() - interval '50 seconds' FROM"
                        " pg_stat_user_tables WHERE relid = 'jobs'::regclass");
    return a.ok() && a->rows() == 1 && a->Bool(0, 0);
  };
  ASSERT_TRUE(analyzed_lately()) << "too slow: the minute since the analysis is nearly up";
  auto churned = store_->RefreshStatistics();
  ASSERT_TRUE(churned.ok());
  EXPECT_FALSE(has_jobs(*churned)) << "analyzed after updates that left its size alone";

  // Growth past twice the rows the statistics know is analyzed at the next look.
  ASSERT_TRUE(store_->SubmitBatch(alice, std::vector<SubmitRequest>(600, Req("more"))).ok());
  // PostgreSQL 15 holds a backend's next report up to 10 s after its last one.
  for (int i = 0; i < 300 && mods().second < 1100; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_GE(mods().second, 1100) << "the inserts never reached pg_stat_user_tables";
  ASSERT_TRUE(analyzed_lately()) << "too slow: the minute since the analysis is nearly up";
  auto grown = store_->RefreshStatistics();
  ASSERT_TRUE(grown.ok());
  EXPECT_TRUE(has_jobs(*grown)) << "not analyzed after growing from 500 to 1,100 rows";
}

}  // namespace
}  // namespace frugal::store
