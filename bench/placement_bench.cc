// Placement latency: one placement/cost Decide over a synthetic cluster of 20 pools
// (5 GPU types x reserved / on-demand / two spot markets), 1k or 10k nodes of 8 GPUs about
// 60% busy, and 10k or 100k pending jobs drawn from realistic templates (sizes 1-16 GPUs,
// type constraints, all tolerances, 30% with deadlines). Run with `scripts/bench placement`.
// The goal (issue 4): 100k jobs x 10k nodes under one second on one core.
#include <benchmark/benchmark.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "scheduler/policy/placement/cost_policy.h"

namespace frugal::policy {
namespace {

using namespace std::chrono_literals;
using model::CapacityKind;

const Timestamp kNow = Timestamp{} + std::chrono::seconds(1767225600);

model::Snapshot MakeCluster(int pending, int nodes, unsigned seed) {
  std::mt19937 rng(seed);
  auto uniform = [&](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  model::Snapshot s;
  s.now = kNow;
  struct Type {
    const char* name;
    int mem;
    double speed, price;
  };
  const Type types[] = {{"l4", 24, 0.3, 0.8},
                        {"a10g", 24, 0.4, 1.0},
                        {"v100", 32, 0.5, 2.5},
                        {"a100", 80, 1.0, 3.0},
                        {"h100", 80, 2.2, 6.0}};
  const CapacityKind kinds[] = {CapacityKind::kReserved, CapacityKind::kOnDemand,
                                CapacityKind::kSpot, CapacityKind::kSpot};
  const double price_factor[] = {0.6, 1.0, 0.35, 0.3};
  model::PoolId id = 1;
  for (const auto& t : types) {
    for (int k = 0; k < 4; ++k) {
      model::Pool p;
      p.id = id++;
      p.name = std::string(t.name) + "-" + std::to_string(k);
      p.kind = kinds[k];
      p.gpu_type = t.name;
      p.gpu_mem_gb = t.mem;
      p.speed = t.speed;
      p.price_per_gpu_hour = static_cast<Micros>(t.price * price_factor[k] * 1e6);
      p.max_gpus = 0;
      p.preemption_rate_per_node_hour = p.kind == CapacityKind::kSpot ? uniform(0.01, 0.2) : 0;
      p.elastic = p.kind == CapacityKind::kOnDemand;
      if (p.elastic) p.max_gpus = nodes * 8 / 20 + 512;
      p.startup_delay = 5min;
      p.node_gpus = 8;
      p.idle_timeout = p.kind == CapacityKind::kReserved ? 0s : 30min;
      s.pools.push_back(p);
    }
  }
  model::AttemptId attempt = 1;
  for (int n = 0; n < nodes; ++n) {
    const model::Pool& p = s.pools[n % s.pools.size()];
    model::Node node;
    node.id = n + 1;
    node.name = "node-" + std::to_string(n + 1);
    node.pool_id = p.id;
    node.gpus = 8;
    node.gpu_type = p.gpu_type;
    node.gpu_mem_gb = p.gpu_mem_gb;
    node.lease_expires_at = kNow + 1h;
    int used = 0;
    while (used < 8 && uniform(0, 1) < 0.75) {
      int g = std::min(8 - used, 1 << pick(4));
      model::RunningAttempt r;
      r.attempt_id = attempt++;
      r.job_id = 10'000'000 + r.attempt_id;
      r.node_id = node.id;
      r.gpus = g;
      r.priority_rank = 1 + pick(3);
      r.pool_id = p.id;
      r.started_at = kNow - std::chrono::seconds(pick(8 * 3600));
      r.estimate = std::chrono::seconds(600 + pick(24 * 3600));
      r.tolerance = static_cast<model::Tolerance>(pick(3));
      if (pick(2)) r.last_checkpoint_at = kNow - std::chrono::seconds(pick(3600));
      if (pick(4) == 0) r.deadline = kNow + std::chrono::seconds(pick(20 * 3600));
      s.running.push_back(r);
      used += g;
    }
    if (used == 0 && pick(3) == 0) node.idle_since = kNow - std::chrono::seconds(pick(3600));
    s.nodes.push_back(node);
  }
  const int sizes[] = {1, 1, 1, 1, 2, 2, 4, 8, 16};
  const std::vector<std::vector<std::string>> constraints = {
      {}, {}, {"a100"}, {"h100"}, {"a100", "h100"}, {"l4", "a10g"}, {"v100", "a100"}};
  const Seconds intervals[] = {30min, 1h, 2h};
  for (int j = 0; j < pending; ++j) {
    model::PendingJob job;
    job.id = j + 1;
    job.team_id = 1 + pick(20);
    job.gpus = sizes[pick(9)];
    job.gpu_types = constraints[pick(static_cast<int>(constraints.size()))];
    if (job.gpu_types.empty() && pick(3) == 0) job.min_gpu_mem_gb = 40;
    job.priority_rank = std::min(3, pick(5));
    job.tolerance = static_cast<model::Tolerance>(pick(3));
    job.created_at = kNow - std::chrono::seconds(pick(48 * 3600));
    job.estimate = std::chrono::seconds(600 + pick(48 * 3600));
    job.checkpoint_interval = intervals[pick(3)];
    if (pick(10) < 3) {
      job.deadline = kNow + std::chrono::seconds(
                                static_cast<long long>(job.estimate->count() * uniform(1.1, 6.0)));
    }
    if (pick(10) == 0) job.progress = uniform(0, 0.9);
    s.pending.push_back(std::move(job));
  }
  for (int t = 1; t <= 20; ++t) s.team_usage[t] = {uniform(0, 5000), kNow - 1h};
  return s;
}

void BM_CostDecide(benchmark::State& state) {
  const int pending = static_cast<int>(state.range(0)), nodes = static_cast<int>(state.range(1));
  model::Snapshot s = MakeCluster(pending, nodes, 42);
  CostPolicy policy;
  model::Plan plan;
  for (auto _ : state) {
    plan = policy.Decide(s);
    benchmark::DoNotOptimize(plan);
  }
  size_t running_gpus = 0;
  for (const auto& r : s.running) running_gpus += r.gpus;
  state.counters["assigned"] = static_cast<double>(plan.assignments.size());
  state.counters["waits"] = static_cast<double>(plan.waits.size());
  state.counters["stops"] = static_cast<double>(plan.stops.size());
  state.counters["requests"] = static_cast<double>(plan.node_requests.size());
  state.counters["releases"] = static_cast<double>(plan.node_releases.size());
  state.counters["busy_pct"] = 100.0 * running_gpus / (8.0 * nodes);
}

// The learned spot controller (issue 14) in the same step: every spot pool gets a fitted
// availability chain (spells drawn per pool), so each deadline job with checkpoints that
// may run on spot is decided by a solved table. Tables are solved before timing, as the
// scheduler's background thread would (at most kWarmSeconds; `queued` says how many of the
// shapes this cluster asks for were still unsolved, and were decided by the rules).
void BM_CostDecideLearned(benchmark::State& state) {
  constexpr double kWarmSeconds = 240;
  const int pending = static_cast<int>(state.range(0)), nodes = static_cast<int>(state.range(1));
  model::Snapshot s = MakeCluster(pending, nodes, 42);
  std::mt19937 rng(7);
  for (auto& p : s.pools) {
    if (p.kind != CapacityKind::kSpot) continue;
    auto m = std::make_shared<model::AvailabilityModel>(model::AvailabilityModel::Empty(180, 8));
    std::exponential_distribution<double> up_len(1.0 / (40 + rng() % 400)),
        down_len(1.0 / (5 + rng() % 50));
    for (int i = 0; i < 200; ++i) {
      m->AddSpell(true, 1 + static_cast<int>(up_len(rng)), true);
      m->AddSpell(false, 1 + static_cast<int>(down_len(rng)), true);
    }
    p.availability = m;
    p.availability_now = {rng() % 4 != 0, static_cast<std::int64_t>(rng() % 36000)};
    p.preemption_prior_per_node_hour = p.preemption_rate_per_node_hour;
  }
  CostPolicy policy;
  const auto& book = policy.spot_book();
  const auto warm_until = std::chrono::steady_clock::now() +
                          std::chrono::duration<double>(kWarmSeconds);
  for (int round = 0; round < 4 && std::chrono::steady_clock::now() < warm_until; ++round) {
    benchmark::DoNotOptimize(policy.Decide(s));  // queues the shapes it lacks
    while (book->queued() > 0 && std::chrono::steady_clock::now() < warm_until)
      book->SolvePending(1);
  }
  model::Plan plan;
  for (auto _ : state) {
    plan = policy.Decide(s);
    benchmark::DoNotOptimize(plan);
  }
  size_t most = 0;
  for (const auto& [pool, bytes] : book->BytesPerPool()) most = std::max(most, bytes);
  state.counters["tables"] = book->tables();
  state.counters["queued"] = book->queued();
  state.counters["pool_mb_max"] = static_cast<double>(most) / (1 << 20);
  state.counters["assigned"] = static_cast<double>(plan.assignments.size());
  state.counters["waits"] = static_cast<double>(plan.waits.size());
}

BENCHMARK(BM_CostDecideLearned)
    ->ArgNames({"pending", "nodes"})
    ->Args({100'000, 10'000})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime()
    ->Iterations(5);

BENCHMARK(BM_CostDecide)
    ->ArgNames({"pending", "nodes"})
    ->Args({10'000, 1'000})
    ->Args({10'000, 10'000})
    ->Args({100'000, 1'000})
    ->Args({100'000, 10'000})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

}  // namespace
}  // namespace frugal::policy

BENCHMARK_MAIN();
