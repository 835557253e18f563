#include "scheduler/policy/placement/ready_jobs.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "scheduler/policy/admission/budget.h"
#include "scheduler/policy/admission/quota.h"

namespace frugal::policy {

namespace {

// The type/memory fit of each entry, computed once per distinct request.
std::string FitKey(const model::PendingJob& j) {
  std::string k = std::to_string(j.min_gpu_mem_gb.value_or(-1));
  for (const auto& t : j.gpu_types) k += "|" + t;
  return k;
}

}  // namespace

double OnDemandRefPrice(const FreeRoom& cap, const std::vector<char>& fits) {
  double best = 0;
  for (int e = 0; e < cap.size(); ++e) {
    const model::Pool& p = cap.entry(e).pool;
    if (!fits[e] || p.kind != model::CapacityKind::kOnDemand) continue;
    double per_ref = static_cast<double>(p.price_per_gpu_hour) / (p.speed > 0 ? p.speed : 1.0);
    if (best == 0 || per_ref < best) best = per_ref;
  }
  return best;
}

std::optional<SpotDecision> LearnedFor(const SpotBook& book, const JobView& v,
                                       const DeadlineView& view, const PoolEntry& spot,
                                       double od_ref_price, const PolicyConfig& config) {
  if (!view.has_deadline || !view.Feasible() || od_ref_price <= 0) return std::nullopt;
  const double speed = spot.pool.speed > 0 ? spot.pool.speed : 1.0;
  SpotJob job;
  job.time_left_hours = view.left_hours - view.margin_hours;
  job.work_hours = v.work.ref_hours / speed;
  job.restore_hours = std::max(v.work.restore_hours, Hours(config.restore_time));
  job.checkpoint_hours = v.work.tolerance == model::Tolerance::kCheckpointed
                             ? v.work.checkpoint_hours : 0;
  job.where = JobWhere::kIdle;
  job.od_price_per_gpu_hour = od_ref_price * speed;
  job.nodes = v.work.nodes;
  return book.Decide(spot.pool, job);
}

ReadyJobs::ReadyJobs(const model::Snapshot& s, const FreeRoom& cap, const PolicyConfig& config,
                       const SpotBook* book)
    : capacity_(cap), config_(config), options_(2 * cap.size()) {
  std::vector<const model::PendingJob*> ready;
  int largest = 1;
  for (const auto& j : s.pending) {
    if (j.failed_dependency || !j.waiting_for.empty()) continue;
    ready.push_back(&j);
    largest = std::max(largest, j.gpus);
  }
  FairShare fair(s, config);
  // Options a team has no quota room for are not options: the job looks elsewhere.
  const QuotaBook quotas(s);
  const bool any_quota = !s.quotas.empty();
  // Likewise paid options a team's hard budget cannot afford: reserved stays open.
  const BudgetBook budgets(s);
  std::map<std::string, std::vector<char>> fits_cache;
  views_.resize(ready.size());
  rates_.assign(ready.size() * options_, -1.0f);
  const int entries = cap.size();

  for (size_t j = 0; j < ready.size(); ++j) {
    const model::PendingJob& job = *ready[j];
    JobView& v = views_[j];
    v.job = &job;
    v.work = WorkOf(job, config);
    auto [it, fresh] = fits_cache.try_emplace(FitKey(job));
    std::vector<char>& fits = it->second;
    if (fresh) {
      fits.resize(entries);
      for (int e = 0; e < entries; ++e)
        fits[e] = PoolFits(job.gpu_types, job.min_gpu_mem_gb, cap.entry(e).pool);
    }
    // Which entries can ever host this gang, now or after growing.
    double safe_hours = kNoLimit;
    for (int e = 0; e < entries; ++e) {
      if (!fits[e]) continue;
      v.any_type_fits = true;
      const PoolEntry& pe = cap.entry(e);
      if (IsSafe(pe.pool.kind) && cap.CanHost(e, job.gpus, config.spread_large_jobs, v.work.nodes))
        safe_hours = std::min(safe_hours, SafeHours(v.work, pe.pool));
    }
    // With no safe capacity to fall back on, a deadline cannot be guarded: best effort.
    bool guarded = safe_hours < kNoLimit;
    v.deadline = ViewDeadline(guarded ? job.deadline : std::nullopt, s.now, safe_hours, config);
    v.late = !v.deadline.Feasible();
    // A spot pool the controller does not decide stays under the rules and their margin.
    const DeadlineView rules_view = v.deadline;
    // The learned controller (issue 14): per spot pool the model's best of spot, on-demand
    // and waiting, in place of the slack rules, wherever it has a table.
    if (book && guarded && MayRunOn(job.tolerance, model::CapacityKind::kSpot)) {
      const double od = OnDemandRefPrice(cap, fits);
      const DeadlineView learned_view =
          ViewDeadline(job.deadline, s.now, safe_hours, config, DeadlineGuard::kController);
      for (int e = 0; e < entries; ++e) {
        const PoolEntry& pe = cap.entry(e);
        if (!fits[e] || pe.pool.kind != model::CapacityKind::kSpot || pe.derived) continue;
        auto d = LearnedFor(*book, v, learned_view, pe, od, config);
        if (!d) continue;
        v.learned.emplace_back(e, std::move(*d));
      }
      // Where the controller decides, the job is judged by its margin throughout (the
      // on-demand option's deadline check included), or it could be sent to on-demand
      // that the rules' wider margin then refuses.
      if (!v.learned.empty()) {
        v.deadline = learned_view;
        v.late = false;
      }
      // Zones: the job goes to (or waits for) the spot pool where the controller expects
      // it to cost least; the other learned pools are closed to it. Where that pool's
      // verdict is on-demand, every learned pool is.
      int best = -1;
      for (int k = 0; k < static_cast<int>(v.learned.size()); ++k)
        if (best < 0 || v.learned[k].second.expected_micros < v.learned[best].second.expected_micros)
          best = k;
      if (best >= 0) {
        const bool spot = v.learned[best].second.action != SpotAction::kOnDemand;
        v.learned_prefers_spot = spot;
        for (int k = 0; k < static_cast<int>(v.learned.size()); ++k)
          if (k != best || !spot) v.learned[k].second.action = SpotAction::kOnDemand;
      }
    }
    v.priority = FactorsFor(job, v.deadline, fair, largest, s.now, config);
    v.tier = std::clamp(static_cast<int>(v.priority.score * 8), 0, 7);

    // data() + offset, not &rates_[...]: with no options rates_ is empty and indexing it is
    // undefined behaviour (UBSan in the unit tests, scripts/sanitize).
    float* row = rates_.data() + j * options_;
    for (int o = 0; o < options_; ++o) {
      int e = OptionEntry(o);
      const PoolEntry& pe = cap.entry(e);
      if (!fits[e] || !MayRunOn(job.tolerance, pe.pool.kind)) continue;
      if (any_quota && !quotas.Allows(job.team_id, pe.pool, job.gpus)) continue;
      bool fresh_node = OptionIsNew(o);
      const int nodes = v.work.nodes;
      if (nodes > 1) {
        // A multi-node gang: each part on a node of its own (decision 0032).
        if (!config.multi_node_gangs) continue;
        const int per = job.gpus / nodes;
        if (fresh_node) {
          if (pe.derived || !pe.pool.elastic) continue;
          if (pe.pool.max_gpus < cap.NewGpusFor(e, job.gpus, nodes)) continue;
          if (pe.pool.node_gpus > 0 && per > pe.pool.node_gpus) continue;
        } else if (pe.largest_node <= 0
                       ? !cap.MayReturnFor(e, job.gpus, config.spread_large_jobs, nodes)
                       : !cap.CanHost(e, job.gpus, config.spread_large_jobs, nodes)) {
          continue;
        }
      } else if (fresh_node) {
        if (pe.derived || !pe.pool.elastic || pe.pool.max_gpus < job.gpus) continue;
        if (pe.pool.node_gpus > 0 && job.gpus > pe.pool.node_gpus && !config.spread_large_jobs)
          continue;
      } else if (pe.largest_node <= 0 ? !cap.MayReturnFor(e, job.gpus, config.spread_large_jobs)
                                      : job.gpus > pe.largest_node && !config.spread_large_jobs) {
        continue;  // (spot that comes back by itself is an option with no room: a wait)
      }
      const SpotDecision* learned = nullptr;
      for (const auto& [le, d] : v.learned)
        if (le == e) learned = &d;
      if (learned && learned->action == SpotAction::kOnDemand) continue;
      // Spot or waiting for it is worth more than paying on-demand now: reserved stays open.
      if (v.learned_prefers_spot && pe.pool.kind == model::CapacityKind::kOnDemand) continue;
      Estimate est = EstimateOn(v.work, pe.pool, Nodes(static_cast<int>(j), o), fresh_node);
      if (budgets.any_hard() && !budgets.Allows(job.team_id, pe.pool, est.cost)) continue;
      double rate;
      if (v.late) {
        // Missing the deadline anyway: safe capacity only, the earliest finish first.
        if (!IsSafe(pe.pool.kind)) continue;
        double per_ref = (est.startup_hours + est.wall_hours) / std::max(v.work.ref_hours, 1e-3);
        rate = std::min(kMaxRate, per_ref * kLateRatePerHour);
      } else {
        bool ok = IsSafe(pe.pool.kind) ? SafeMeets(est, v.deadline)
                                       : learned != nullptr || SpotCovered(est, rules_view);
        if (!ok) continue;
        rate = DecisionRate(v.work, pe.pool, est, config);
        if (fresh_node) rate = rate * kNewNodeFactor + 1;
        rate = std::min(rate, kMaxRate);
      }
      row[o] = static_cast<float>(rate);
    }
  }
}

int ReadyJobs::Nodes(int j, int o) const {
  const PoolEntry& pe = capacity_.entry(OptionEntry(o));
  int gpus = views_[j].work.gpus;
  if (views_[j].work.nodes > 1) return views_[j].work.nodes;
  return OptionIsNew(o) || pe.largest_node <= 0 ? NodesSpanned(gpus, pe.pool.node_gpus)
                                                : NodesSpanned(gpus, pe.largest_node);
}

Estimate ReadyJobs::EstimateFor(int j, int o) const {
  return EstimateOn(views_[j].work, capacity_.entry(OptionEntry(o)).pool, Nodes(j, o),
                    OptionIsNew(o));
}

}  // namespace frugal::policy
