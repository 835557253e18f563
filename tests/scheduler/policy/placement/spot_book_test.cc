// The learned spot controller (policy/spot_dp.h, policy/spot_book.h, decision 0023): the
// compact policy, the book that caches it, and placement/cost deciding by it.
#include "scheduler/policy/placement/spot_book.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "tests/scheduler/policy/placement/cost_policy_fixture.h"
#include "scheduler/policy/placement/cost_policy.h"

namespace frugal::policy {
namespace {

using namespace testing;
using model::AvailabilityModel;
using model::CapacityKind;

// A chain fitted on `spells` repeated `times` (up and down in turn, in ticks).
std::shared_ptr<const AvailabilityModel> Model(std::vector<int> spells, int times) {
  auto m = std::make_shared<AvailabilityModel>(AvailabilityModel::Empty(180, 8));
  for (int t = 0; t < times; ++t)
    for (size_t i = 0; i < spells.size(); ++i) m->AddSpell(i % 2 == 0, spells[i], true);
  return m;
}

// Memoryless up and down spells of about 7 ticks (20 minutes), 400 of each: spot too
// flighty to pay when it is priced near on-demand.
std::shared_ptr<const AvailabilityModel> FlightyModel() {
  auto m = std::make_shared<AvailabilityModel>(AvailabilityModel::Empty(180, 8));
  std::mt19937 rng(3);
  std::geometric_distribution<int> spell(1.0 / 7);
  for (int i = 0; i < 400; ++i)
    m->AddSpell(true, 1 + spell(rng), true), m->AddSpell(false, 1 + spell(rng), true);
  return m;
}

std::vector<std::uint8_t> UpOf(const AvailabilityModel& m) {
  std::vector<std::uint8_t> up(m.states());
  for (int s = 0; s < m.states(); ++s) up[s] = m.IsUp(s);
  return up;
}

TEST(SpotPolicyTest, TheCompactPolicyIsSmallAndOnDemandWhenSlackRunsOut) {
  auto m = Model({200, 10}, 50);  // long up spells, short outages
  auto next = m->Transitions(1, 0.05, 0.05);
  SpotDpShape shape{.max_time = 640, .max_work = 512, .changeover = 2, .checkpoint = 5,
                    .spot_price = 0.3};
  SpotPolicy p(next, UpOf(*m), shape);
  // The full table would be 641 x 513 x 19 modes x 16 states = 100 MB of bytes.
  EXPECT_LT(p.bytes(), 8u << 20) << p.bytes();
  SpotJobState s{.time_left = 640, .work_left = 400, .where = JobWhere::kIdle,
                 .chain_state = m->State(true, 0)};
  EXPECT_EQ(p.Action(s), SpotAction::kSpot);
  // No slack left: only on-demand finishes in time.
  s.time_left = 402;
  EXPECT_EQ(p.Action(s), SpotAction::kOnDemand);
  // A job bigger than the table: on-demand, whatever the chain says.
  s.work_left = 600;
  s.time_left = 640;
  EXPECT_FALSE(p.Covers(s));
  EXPECT_EQ(p.Action(s), SpotAction::kOnDemand);
}

TEST(SpotPolicyTest, TheForecastAgreesWithTheTablesExpectation) {
  auto m = Model({40, 8}, 30);
  auto next = m->Transitions(1, 0.05, 0.05);
  SpotDpShape shape{.max_time = 200, .max_work = 120, .changeover = 1, .checkpoint = 3,
                    .spot_price = 0.35};
  SpotPolicy p(next, UpOf(*m), shape);
  const int state = m->State(true, 0);
  SpotJobState s{.time_left = 200, .work_left = 120, .where = JobWhere::kIdle, .chain_state = state};
  SpotForecast f = Forecast(p, next, UpOf(*m), s, 4000, 7);
  EXPECT_EQ(f.miss_risk, 0);
  EXPECT_NEAR(f.mean_cost, p.StartValue(state), 4 * f.sd_cost / std::sqrt(4000.0) + 1e-9);
  EXPECT_GT(f.reclaims, 0);
  EXPECT_LT(f.mean_cost, 121);  // cheaper than on-demand (1 + 120 ticks)
}

// The idle value is kept every 8 ticks of work; a job between two grid points is read
// between them, not at the larger (which overstated a 20-tick job as a 24-tick one by 20%).
TEST(SpotPolicyTest, TheIdleValueIsReadBetweenGridPoints) {
  auto m = Model({40, 8}, 30);
  auto next = m->Transitions(1, 0.05, 0.05);
  SpotDpShape big{.max_time = 80, .max_work = 32, .changeover = 1, .checkpoint = 3,
                  .spot_price = 0.35};
  SpotDpShape exact = big;
  exact.max_work = 20;
  SpotPolicy grid(next, UpOf(*m), big), truth(next, UpOf(*m), exact);
  for (int state : {m->State(true, 0), m->State(true, 20), m->State(false, 2)}) {
    SpotJobState s{.time_left = 80, .work_left = 20, .where = JobWhere::kIdle,
                   .chain_state = state};
    const double want = truth.StartValue(state);
    s.work_left = 24;
    const double at24 = grid.IdleValue(s);
    s.work_left = 20;
    EXPECT_NEAR(grid.IdleValue(s), want, 0.02 * want) << "state " << state << ", 24: " << at24;
    EXPECT_LT(grid.IdleValue(s), at24);
  }
}

model::Pool SpotPool(std::shared_ptr<const AvailabilityModel> m, bool up) {
  model::Pool p = MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0);
  p.availability = std::move(m);
  p.availability_now = {up, 0};
  p.preemption_prior_per_node_hour = 0.1;
  return p;
}

SpotJob TenHourJob(double time_left_hours) {
  return SpotJob{.time_left_hours = time_left_hours, .work_hours = 10, .restore_hours = 0.1,
                 .checkpoint_hours = 0.25, .od_price_per_gpu_hour = 3e6};
}

TEST(SpotBookTest, QueuesATableForTheBackgroundAndDecidesOnceItIsSolved) {
  SpotBook book;  // not inline: Decide never solves
  model::Pool pool = SpotPool(Model({200, 10}, 50), true);
  EXPECT_FALSE(book.Decide(pool, TenHourJob(30)).has_value());
  EXPECT_EQ(book.tables(), 0);
  EXPECT_EQ(book.SolvePending(), 1);
  auto d = book.Decide(pool, TenHourJob(30));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->action, SpotAction::kSpot);
  EXPECT_GT(d->hazard, 0);
  // One table serves the rest of the job's life, and a job with more time (decided as if
  // it had twice its work bucket: 512 ticks for 200 ticks of work).
  EXPECT_TRUE(book.Decide(pool, TenHourJob(12)).has_value());
  EXPECT_TRUE(book.Decide(pool, TenHourJob(40)).has_value());
  EXPECT_EQ(book.tables(), 1);
  EXPECT_EQ(book.queued(), 0);
  EXPECT_LT(book.BytesPerPool()[3], 64u << 20);
  // A refitted model replaces the pool's tables.
  pool.availability = Model({200, 10}, 51);
  EXPECT_FALSE(book.Decide(pool, TenHourJob(30)).has_value());
  EXPECT_EQ(book.tables(), 0);
  EXPECT_EQ(book.SolvePending(), 1);
  ASSERT_TRUE(book.Decide(pool, TenHourJob(30)).has_value());
  // So does a new prior: the same counts mixed with another admin rate are another chain.
  pool.preemption_prior_per_node_hour = 2.0;
  EXPECT_FALSE(book.Decide(pool, TenHourJob(30)).has_value());
  EXPECT_EQ(book.tables(), 0);
}

// The simulator shares one book among runs that learned from different pasts, interleaved
// on threads. With room for both models, neither run's decision drops the other's tables
// (with one model per pool, each decision did, and every decision solved its table again).
TEST(SpotBookTest, InterleavedModelsKeepTheirTablesWhereTheBookHasRoomForThem) {
  SpotBook book(/*solve_inline=*/false, 64u << 20, /*models_per_pool=*/2);
  model::Pool a = SpotPool(Model({200, 10}, 50), true);
  model::Pool b = a;
  b.availability = Model({200, 10}, 51);
  EXPECT_FALSE(book.Decide(a, TenHourJob(30)).has_value());
  EXPECT_FALSE(book.Decide(b, TenHourJob(30)).has_value());
  EXPECT_EQ(book.SolvePending(), 2);
  EXPECT_TRUE(book.Decide(a, TenHourJob(30)).has_value());
  EXPECT_TRUE(book.Decide(b, TenHourJob(30)).has_value());
  EXPECT_TRUE(book.Decide(a, TenHourJob(30)).has_value());
  EXPECT_EQ(book.tables(), 2);
  // A third model goes past the room: the least recently used (b's) loses its tables.
  model::Pool c = a;
  c.availability = Model({200, 10}, 52);
  EXPECT_FALSE(book.Decide(c, TenHourJob(30)).has_value());
  EXPECT_EQ(book.tables(), 1);
  EXPECT_TRUE(book.Decide(a, TenHourJob(30)).has_value());
  EXPECT_FALSE(book.Decide(b, TenHourJob(30)).has_value());
}

TEST(SpotBookTest, AJobWithoutCheckpointsOrAModelIsLeftToTheRules) {
  SpotBook book(/*solve_inline=*/true);
  SpotJob job = TenHourJob(30);
  job.checkpoint_hours = 0;
  EXPECT_FALSE(book.Decide(SpotPool(Model({200, 10}, 50), true), job).has_value());
  EXPECT_FALSE(book.Decide(SpotPool(nullptr, true), TenHourJob(30)).has_value());
}

// A gang of N nodes (decision 0032) decides with the pool's chain for N ("all N up") and
// the admin's prior times N; with none fitted for its size the rules decide.
TEST(SpotBookTest, AGangDecidesWithItsSizesChainAndPrior) {
  SpotBook book(/*solve_inline=*/true);
  model::Pool pool = SpotPool(Model({2000, 5}, 20), true);
  pool.preemption_prior_per_node_hour = 0.1;
  SpotJob gang = TenHourJob(30);
  gang.nodes = 2;
  EXPECT_FALSE(book.Decide(pool, gang).has_value());
  auto pair = Model({40, 5}, 60);
  pool.gang_availability[2] = pair;
  auto d = book.Decide(pool, gang);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->model, pair);
  EXPECT_DOUBLE_EQ(d->chain->prior_reclaims_per_hour, 0.2);
  auto one = book.Decide(pool, TenHourJob(30));
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(one->model, pool.availability);
  EXPECT_GT(d->hazard, one->hazard);
  // Each keeps its tables: deciding one never drops the other's.
  const int tables = book.tables();
  book.Decide(pool, gang);
  book.Decide(pool, TenHourJob(30));
  EXPECT_EQ(book.tables(), tables);
}

class LearnedPlacementTest : public CostPolicyTest {
 protected:
  void SetUp() override {
    config_.solve_spot_tables_inline = true;
    s_.pools = {MakePool(2, "a100-od", CapacityKind::kOnDemand, "a100", 3.0),
                MakePool(3, "a100-spot", CapacityKind::kSpot, "a100", 1.0, 1.0, 80, 8)};
    s_.nodes = {MakeNode(20, 2, 8)};
  }
  void Spot(std::shared_ptr<const AvailabilityModel> m, bool up) {
    s_.pools[1].availability = std::move(m);
    s_.pools[1].availability_now = {up, 0};
    if (up) s_.nodes.push_back(MakeNode(30, 3, 8));
  }
};

// Spot that stays up for days: the job goes there although the slack rules would too.
TEST_F(LearnedPlacementTest, RunsOnSpotThatTheModelExpectsToLast) {
  Spot(Model({2000, 5}, 20), true);
  s_.pending = {CheckpointedJob(20h)};
  EXPECT_EQ(NodeOf(Decide(), 1), 30);
}

// Spot that is down and, by its history, back within minutes: with 10 h of slack the job
// waits for it rather than pay on-demand now.
TEST_F(LearnedPlacementTest, WaitsForSpotThatTheModelExpectsBackSoon) {
  Spot(Model({400, 3}, 40), false);
  s_.pending = {CheckpointedJob(20h)};
  auto plan = Decide();
  EXPECT_TRUE(AssignmentsOf(plan, 1).empty()) << NodeOf(plan, 1);
}

// Spot whose outages last days by its history. Waiting costs nothing while the slack lasts,
// so the controller keeps the chance of a return; once the slack is down to what on-demand
// needs, it pays on-demand.
TEST_F(LearnedPlacementTest, WaitsWhileItIsFreeThenPaysOnDemandForALongOutage) {
  Spot(Model({30, 2000}, 20), false);
  s_.pending = {CheckpointedJob(20h)};
  EXPECT_TRUE(AssignmentsOf(Decide(), 1).empty());
  s_.pending = {CheckpointedJob(10h + 20min)};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

// Memoryless up spells of about 20 minutes, hourly checkpoints, spot 3% below on-demand:
// the restores and reclaims take more than spot saves, so the job runs on on-demand with
// spot up and days of slack.
TEST_F(LearnedPlacementTest, AvoidsSpotWhoseSpellsAreTooShortToPay) {
  auto m = FlightyModel();
  s_.pools[1].price_per_gpu_hour = 2900000;
  Spot(m, true);
  s_.pending = {CheckpointedJob(60h)};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
  // At a third of the price the same spells pay: spot.
  s_.pools[1].price_per_gpu_hour = 1000000;
  EXPECT_EQ(NodeOf(Decide(), 1), 30);
}

// Restores of 12 minutes: the rules keep two of them (24m) in hand before the deadline,
// the controller only the configured 10m, since its tables charge every changeover and
// every rollback themselves. Spot lasts for days; the job is half done (5h left from its
// latest checkpoint) and checkpoints every 6 minutes.
TEST_F(LearnedPlacementTest, KeepsItsOwnMarginNotTheRulesTwoChangeovers) {
  config_.restore_time = 12min;
  Spot(Model({2000, 5}, 20), true);
  const Seconds on_demand = 5h + 12min;  // from the checkpoint: the work and a restore
  // Running on spot, checkpoint just written, 20m beyond what on-demand needs: the rules'
  // view is 4m short and would send it to on-demand; for the controller a reclaim (a
  // restore and at most one 3-minute tick lost) still leaves on-demand in time: it stays.
  auto r = MakeRunning(100, 1, 30, 1);
  r.pool_id = 3;
  r.tolerance = model::Tolerance::kCheckpointed;
  r.estimate = 10h;
  r.checkpoint_interval = 6min;
  r.progress = 0.5;
  r.last_checkpoint_at = At(0s);
  r.deadline = At(on_demand + 20min);
  s_.running = {r};
  auto plan = Decide();
  EXPECT_TRUE(plan.stops.empty()) << plan.stops.front().reason;
  // Pending, 40m beyond: going to spot costs a restore, and a reclaim there another one.
  // The rules keep 16m of slack against a worst reclaim of 18m (the interval and a
  // restore): on-demand. The controller has 30m: a restore to start, and then still a
  // restore and a tick in hand: spot.
  s_.running.clear();
  auto pending = CheckpointedJob(on_demand + 40min);
  pending.progress = 0.5;
  pending.checkpoint_interval = 6min;
  s_.pending = {pending};
  EXPECT_EQ(NodeOf(Decide(), 1), 30);
  // At 20m beyond, a reclaim after the restore would leave too little: on-demand.
  s_.pending[0].deadline = At(on_demand + 20min);
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
}

// The controller's margin is for the pools it decides. The same pending job, 40m over
// on-demand's need, with its learned pool priced near on-demand and flighty (its verdict:
// on-demand) and a second spot pool with no model, judged by the rules: their margin leaves
// 16m of slack against a worst reclaim of 18m, so that pool is no option: on-demand.
TEST_F(LearnedPlacementTest, APoolTheControllerDoesNotDecideKeepsTheRulesMargin) {
  config_.restore_time = 12min;
  auto m = FlightyModel();
  s_.pools[1].price_per_gpu_hour = 2900000;
  Spot(m, true);
  s_.pools.push_back(MakePool(4, "a100-spot-b", model::CapacityKind::kSpot, "a100", 1.0));
  s_.pools.back().preemption_rate_per_node_hour = 0.1;
  s_.nodes.push_back(MakeNode(40, 4, 8));
  auto pending = CheckpointedJob(5h + 12min + 40min);
  pending.progress = 0.5;
  pending.checkpoint_interval = 6min;
  s_.pending = {pending};
  EXPECT_EQ(NodeOf(Decide(), 1), 20);
  // With a day to spare, the rules send it to that pool.
  s_.pending[0].deadline = At(29h);
  EXPECT_EQ(NodeOf(Decide(), 1), 40);
}

// A 2-node gang on a pool whose nodes, one at a time, last for days, but two of which
// have seldom stayed up together for long (memoryless spells of about 20 minutes, spot 3%
// below on-demand): the gang pays on-demand, where a one-node chain would say spot. When
// pairs last as long as single nodes, it runs on spot.
TEST_F(LearnedPlacementTest, AGangPlansWithAllOfItsNodesUp) {
  auto pairs = FlightyModel();
  s_.pools[1].price_per_gpu_hour = 2900000;
  s_.pools[0].max_gpus = s_.pools[1].max_gpus = 16;
  s_.nodes.push_back(MakeNode(21, 2, 8));
  Spot(Model({2000, 5}, 20), true);
  s_.nodes.push_back(MakeNode(31, 3, 8));
  s_.pools[1].gang_availability[2] = pairs;
  auto gang = CheckpointedJob(60h);
  gang.gpus = 16;
  gang.nodes = 2;
  s_.pending = {gang};
  auto parts = AssignmentsOf(Decide(), 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node_id + parts[1].node_id, 41);  // on-demand 20 and 21
  s_.pools[1].gang_availability[2] = s_.pools[1].availability;
  parts = AssignmentsOf(Decide(), 1);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].node_id + parts[1].node_id, 61);  // spot 30 and 31
}

}  // namespace
}  // namespace frugal::policy
