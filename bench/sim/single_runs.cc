#include "bench/sim/single_runs.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include "bench/sim/baselines.h"
#include "bench/sim/single_job_sim.h"
#include "bench/sim/frugal_controller.h"
#include "bench/sim/model_dp.h"
#include "bench/sim/optimum.h"

namespace frugal::sim {

void ParallelFor(int n, int threads, const std::function<void(int)>& fn) {
  std::atomic<int> next{0};
  auto worker = [&] {
    for (int i; (i = next.fetch_add(1)) < n;) fn(i);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::max(1, threads); ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
}

std::vector<int> StartPoints(const Case& c, int n, int window, std::uint64_t seed, int first) {
  std::uint64_t h = seed;
  for (char ch : c.name) h = (h ^ static_cast<unsigned char>(ch)) * 1099511628211ull;
  std::mt19937_64 rng(h);
  const int stride = std::max(1, c.start_stride);
  int last = (c.market.steps - window) / stride;
  first = (first + stride - 1) / stride;
  if (last < first) return {};
  std::set<int> picked;
  std::uniform_int_distribution<int> pick(first, last);
  int tries = 0;
  while (static_cast<int>(picked.size()) < std::min(n, last - first + 1) && tries++ < 100 * n)
    picked.insert(pick(rng) * stride);
  return {picked.begin(), picked.end()};
}

JobShape ShapeFor(const Market& m, double work_hours, double fraction, double d_hours,
                  double checkpoint_hours, int start) {
  const double step_h = m.StepHours();
  JobShape job;
  job.start = start;
  job.work = static_cast<int>(std::floor(work_hours / step_h + 1e-9));
  job.deadline = static_cast<int>(std::floor(work_hours / fraction / step_h + 1e-9));
  job.changeover = std::max(1, static_cast<int>(std::lround(d_hours / step_h)));
  job.checkpoint = std::max(1, static_cast<int>(std::lround(checkpoint_hours / step_h)));
  return job;
}

std::unique_ptr<policy::Policy> FrugalPolicyFor(double d_hours) {
  policy::PolicyConfig config;
  config.restore_time = Seconds(std::lround(d_hours * 3600));
  config.spread_large_jobs = true;
  config.solve_spot_tables_inline = true;  // every simulated decision has its table
  // One book serves every run of a case on every thread, and each run refits its model
  // daily from its own past: keep the tables of the models the runs in flight use.
  config.spot_models_per_pool = 32;
  config.spot_table_bytes_per_pool = size_t{512} << 20;
  auto made = policy::MakePolicy("placement/cost", config);
  return made.ok() ? std::move(*made) : nullptr;
}

std::vector<RunRecord> RunSingleJobs(const SingleJobSpec& spec, int threads) {
  return std::move(RunSingleJobsIn(spec, {spec.loss}, threads).front());
}

std::vector<std::vector<RunRecord>> RunSingleJobsIn(const SingleJobSpec& spec,
                                                    const std::vector<LossSetting>& losses,
                                                    int threads) {
  const int S = static_cast<int>(losses.size());
  std::vector<std::unique_ptr<policy::Policy>> frugal;
  for (double d : spec.d_hours) frugal.push_back(FrugalPolicyFor(d));
  double min_fraction = *std::min_element(spec.fractions.begin(), spec.fractions.end());
  struct Task {
    int case_index, start;
  };
  std::vector<Task> tasks;
  for (int c = 0; c < static_cast<int>(spec.cases.size()); ++c) {
    const Market& m = spec.cases[c].market;
    int window = static_cast<int>(std::ceil(spec.work_hours / min_fraction / m.StepHours()));
    const int first = spec.second_half ? m.steps / 2 : 0;
    for (int s : StartPoints(spec.cases[c], spec.starts, window, spec.seed, first))
      tasks.push_back({c, s});
  }
  // The markets with each setting's notice on every pool: [setting][case].
  std::vector<std::vector<Market>> markets(S);
  std::vector<std::vector<std::vector<Market>>> per_zone(S);
  for (int si = 0; si < S; ++si) {
    for (const Case& c : spec.cases) {
      markets[si].push_back(c.market);
      ApplyNotice(markets[si].back(), losses[si]);
      per_zone[si].push_back(c.per_zone);
      for (Market& zm : per_zone[si].back()) ApplyNotice(zm, losses[si]);
    }
  }
  std::vector<std::vector<std::vector<RunRecord>>> out(
      S, std::vector<std::vector<RunRecord>>(tasks.size()));
  // One case at a time: the reference's tables (hundreds of MB each) live for one case.
  for (size_t first = 0; first < tasks.size();) {
    size_t last = first;
    while (last < tasks.size() && tasks[last].case_index == tasks[first].case_index) ++last;
    const Case& this_case = spec.cases[tasks[first].case_index];
    // The model-optimal references (decision 0017): in-sample, the chain fitted on the
    // whole series; held out, on the first half only (jobs then come in the second half).
    // One table per (chain, d, checkpoint interval), shared by the settings that need the
    // same one (notice-aware and no notice both keep 15-minute checkpoints).
    struct Reference {
      std::string name;
      SpotChain chain;
      std::map<std::pair<int, int>, std::unique_ptr<ChainDpTable>> tables;  // (d, checkpoint)
      std::optional<LossSetting> only;  // runs in this setting only
      bool in(LossSetting loss) const { return !only || *only == loss; }
    };
    std::vector<Reference> references;
    if (spec.reference_bins > 0 && this_case.market.zones.size() == 1) {
      const Market& m = this_case.market;
      references.push_back(
          {kReferenceName, FitMarketChain(m, m.steps, spec.reference_bins), {}, std::nullopt});
      if (spec.second_half)
        references.push_back({kReferenceHeldOutName,
                              FitMarketChain(m, m.steps / 2, spec.reference_bins),
                              {},
                              spec.held_out_only});
      struct Todo {
        Reference* ref;
        int d_index;
        JobShape widest;
      };
      std::vector<Todo> todo;
      for (auto& ref : references) {
        for (int di = 0; di < static_cast<int>(spec.d_hours.size()); ++di) {
          for (LossSetting loss : losses) {
            if (!ref.in(loss)) continue;
            JobShape widest = ShapeFor(m, spec.work_hours, min_fraction, spec.d_hours[di],
                                       spec.checkpoint_hours, 0);
            ApplyLossSetting(widest, loss);
            if (ref.tables.emplace(std::make_pair(di, widest.checkpoint), nullptr).second)
              todo.push_back({&ref, di, widest});
          }
        }
      }
      // The table knows whole-step rework since the latest checkpoint only: with a notice
      // (a 60-s write lost) it plans for the periodic checkpoints' rework, more than the
      // engine takes back (a pessimistic reference there).
      ParallelFor(static_cast<int>(todo.size()), threads, [&](int i) {
        const Todo& t = todo[i];
        t.ref->tables[{t.d_index, t.widest.checkpoint}] =
            std::make_unique<ChainDpTable>(t.ref->chain, t.widest.deadline, t.widest.work,
                                           t.widest.changeover, t.widest.checkpoint);
      });
    }
    const int n = static_cast<int>(last - first);
    ParallelFor(n * S, threads, [&](int k) {
      const int si = k / n, i = static_cast<int>(first) + k % n;
      const LossSetting loss = losses[si];
      const Task& task = tasks[i];
      const Market& market = markets[si][task.case_index];
      OnDemandOnly od;
      Greedy greedy;
      UniformProgress up;  // the authors' rc_cr_threshold
      UniformProgress up_first(UniformProgress::Hysteresis::kSpotFirst);
      UniformProgress up_safe(UniformProgress::Hysteresis::kHolds, /*keep_rework=*/true);
      SkyPilotFailover sky;
      for (double f : spec.fractions) {
        for (size_t di = 0; di < spec.d_hours.size(); ++di) {
          const double d = spec.d_hours[di];
          FrugalController fc(*frugal[di],
                              {spec.frugal_prior_per_node_hour, spec.frugal_cycle_steps,
                               spec.second_half ? market.steps / 2 : -1});
          JobShape job = ShapeFor(market, spec.work_hours, f, d, spec.checkpoint_hours, task.start);
          ApplyLossSetting(job, loss);
          double norm = OnDemandCost(market, job);
          auto record = [&](const std::string& name, double cost, const RunResult* r) {
            RunRecord run;
            run.case_index = task.case_index;
            run.fraction = f;
            run.d_hours = d;
            run.start = task.start;
            run.policy = name;
            run.cost = cost;
            run.norm = cost / norm;
            if (r) {
              run.missed = r->missed;
              run.finish_hours = r->finish * market.StepHours();
              run.reclaims = r->reclaims;
              run.lost_hours = r->lost_seconds / 3600.0;
              run.spot_hours = r->spot_steps * market.StepHours();
              run.od_hours = r->od_steps * market.StepHours();
              run.launches = r->launches;
            }
            out[si][i].push_back(run);
          };
          auto simulate = [&](const Market& m, Controller& ctl) {
            RunResult r = RunJob(m, job, ctl);
            record(ctl.Name(), r.cost, &r);
          };
          simulate(market, od);
          if (!spec.multi_zone) {
            simulate(market, greedy);
            simulate(market, up);
            simulate(market, up_first);
            if (!spec.baselines_only) simulate(market, up_safe);
          } else {
            simulate(market, sky);
            // Single-zone Uniform Progress: the job pinned to one zone (the user picked it),
            // each zone equally likely: its expected cost is the mean over zones.
            double sum = 0;
            int missed = 0;
            for (const Market& zm : per_zone[si][task.case_index]) {
              RunResult r = RunJob(zm, job, up);
              sum += r.cost;
              missed += r.missed;
            }
            RunResult mean;
            mean.missed = missed > 0;
            record(kUpZoneMeanName, sum / std::max<size_t>(1, per_zone[si][task.case_index].size()),
                   &mean);
          }
          if (!spec.baselines_only) simulate(market, fc);
          for (const Reference& ref : references) {
            if (!ref.in(loss)) continue;
            ChainDpController controller(*ref.tables.at({static_cast<int>(di), job.checkpoint}),
                                         ref.chain);
            RunResult r = RunJob(market, job, controller);
            record(ref.name, r.cost, &r);
          }
          record(kOptimumName, OptimumCost(market, job), nullptr);
        }
      }
    });
    first = last;
  }
  std::vector<std::vector<RunRecord>> runs(S);
  for (int si = 0; si < S; ++si)
    for (auto& v : out[si]) runs[si].insert(runs[si].end(), v.begin(), v.end());
  return runs;
}

}  // namespace frugal::sim
