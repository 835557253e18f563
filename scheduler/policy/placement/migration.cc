#include "scheduler/policy/placement/migration.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "scheduler/policy/placement/cost_model.h"
#include "scheduler/policy/placement/explain.h"
#include "scheduler/policy/admission/quota.h"

namespace frugal::policy {

namespace {

constexpr double kSecondHours = 1.0 / 3600;

struct Moving {
  const model::RunningAttempt* first = nullptr;
  std::vector<const model::RunningAttempt*> parts;
  int gpus = 0;
  bool stopping = false;
};

// Running checkpointed jobs, a gang's attempts together, in job id order.
std::map<model::JobId, Moving> CheckpointedJobs(const model::Snapshot& s) {
  std::map<model::JobId, Moving> jobs;
  for (const auto& r : s.running) {
    Moving& m = jobs[r.job_id];
    if (!m.first) m.first = &r;
    m.parts.push_back(&r);
    m.gpus += r.gpus;
    m.stopping = m.stopping || r.stopping;
  }
  for (auto it = jobs.begin(); it != jobs.end();) {
    // A multi-node gang is not moved: its parts would have to land together (decision 0032).
    bool keep = it->second.first->tolerance == model::Tolerance::kCheckpointed &&
                it->second.first->gang_size <= 1 &&
                !it->second.stopping && it->second.gpus > 0;
    it = keep ? std::next(it) : jobs.erase(it);
  }
  return jobs;
}

// Time to finish on the fastest safe pool that could host the job (kNoLimit: none), and the
// best such pool with room now or by growing (-1: none).
std::pair<double, int> SafeFallback(const FreeRoom& cap, const model::RunningAttempt& a,
                                    const Work& work, int gpus, const PolicyConfig& config) {
  double safe_hours = kNoLimit, target_hours = kNoLimit;
  int target = -1;
  for (int e = 0; e < cap.size(); ++e) {
    const PoolEntry& pe = cap.entry(e);
    if (!IsSafe(pe.pool.kind) || !PoolFits(a.gpu_types, a.min_gpu_mem_gb, pe.pool)) continue;
    if (!cap.CanHost(e, gpus, config.spread_large_jobs)) continue;
    bool room_now = cap.Usable(e, gpus, config.spread_large_jobs) >= gpus;
    double h = SafeHours(work, pe.pool);
    safe_hours = std::min(safe_hours, h);
    if ((room_now || cap.NewCapacity(e) >= gpus) && h < target_hours) target_hours = h, target = e;
  }
  return {safe_hours, target};
}

Work MoveWork(const model::RunningAttempt& a, int gpus, const PolicyConfig& config) {
  Work work = WorkOf(a, config);
  work.gpus = gpus;
  work.resumes = true;  // a move always resumes from the checkpoint
  return work;
}

// The learned controller's view of running job `a` on `pool`.
std::optional<SpotDecision> LearnedRunning(const SpotBook* book, const model::Snapshot& s,
                                           const model::RunningAttempt& a, const Work& work,
                                           const DeadlineView& view, const model::Pool& spot,
                                           JobWhere where, double od_ref_price,
                                           const PolicyConfig& config) {
  if (!book || !a.deadline || !view.Feasible() || od_ref_price <= 0) return std::nullopt;
  const double speed = spot.speed > 0 ? spot.speed : 1.0;
  SpotJob job;
  job.time_left_hours = view.left_hours - view.margin_hours;
  // Every launch pays the restore first (the simulator's changeover); the work since the
  // later of its end and the latest checkpoint is unsaved, and already done.
  const double restore = Hours(config.restore_time);
  job.changeover_left_hours = std::max(0.0, restore - HoursBetween(a.started_at, s.now));
  Timestamp anchor = a.started_at + config.restore_time;
  if (a.last_checkpoint_at && *a.last_checkpoint_at > anchor) anchor = *a.last_checkpoint_at;
  job.unsaved_hours = std::max(0.0, HoursBetween(anchor, s.now));
  job.work_hours = std::max(0.0, work.ref_hours / speed - job.unsaved_hours);
  job.restore_hours = restore;
  job.checkpoint_hours = work.checkpoint_hours;
  job.where = where;
  job.od_price_per_gpu_hour = od_ref_price * speed;
  return book->Decide(spot, job);
}

double OnDemandRefPriceFor(const FreeRoom& cap, const model::RunningAttempt& a) {
  std::vector<char> fits(cap.size());
  for (int e = 0; e < cap.size(); ++e)
    fits[e] = PoolFits(a.gpu_types, a.min_gpu_mem_gb, cap.entry(e).pool);
  return OnDemandRefPrice(cap, fits);
}

}  // namespace

void MigrateOffSpot(const model::Snapshot& s, const FreeRoom& cap, const PolicyConfig& config,
                    model::Plan& plan, const SpotBook* book) {
  for (const auto& [job_id, m] : CheckpointedJobs(s)) {
    const model::RunningAttempt& a = *m.first;
    if (!a.deadline) continue;
    int spot_entry = cap.EntryOfNode(a.node_id);
    if (spot_entry < 0 || IsSafe(cap.entry(spot_entry).pool.kind)) continue;
    const bool resumed = WorkOf(a, config).resumes;
    Work work = MoveWork(a, m.gpus, config);
    auto [safe_hours, target] = SafeFallback(cap, a, work, m.gpus, config);
    if (target < 0) continue;  // nowhere safe to go: staying on spot is the better bet
    DeadlineView view = ViewDeadline(a.deadline, s.now, safe_hours, config);
    const model::Pool& spot = cap.entry(spot_entry).pool;
    const DeadlineView learned_view =
        ViewDeadline(a.deadline, s.now, safe_hours, config, DeadlineGuard::kController);
    if (auto d = LearnedRunning(book, s, a, work, learned_view, spot, JobWhere::kSpot,
                                OnDemandRefPriceFor(cap, a), config)) {
      if (d->action == SpotAction::kSpot) continue;
      std::string reason = LearnedMoveReason(spot, *d, cap.entry(target).pool);
      for (const auto* p : m.parts)
        plan.stops.push_back({p->attempt_id, p->job_id, model::StopKind::kMigrateOffSpot, reason});
      continue;
    }
    Estimate here = EstimateOn(work, spot, static_cast<int>(m.parts.size()), false);
    // The slack is counted from the latest checkpoint, so the work done since is already
    // written off; a reclaim can still take what runs until the next checkpoint (after the
    // restore, in an attempt that resumed). Slack and exposure fall together between
    // checkpoints, so the job placed with slack >= restore + interval stays until a reclaim
    // (or a slower run) has used that up: no flapping on and off spot.
    Timestamp anchor = a.started_at + (resumed ? config.restore_time : Seconds(0));
    if (a.last_checkpoint_at && *a.last_checkpoint_at > anchor) anchor = *a.last_checkpoint_at;
    double exposure =
        std::clamp(HoursBetween(s.now, anchor) + work.checkpoint_hours, 0.0, here.loss_hours);
    if (view.slack_hours + kSecondHours >= exposure) continue;  // equal, up to rounding
    std::string reason = MigrationReason(spot, view.slack_hours, exposure, cap.entry(target).pool);
    for (const auto* p : m.parts)
      plan.stops.push_back({p->attempt_id, p->job_id, model::StopKind::kMigrateOffSpot, reason});
  }
}

double MoveToSpotSaving(double gpus, const model::Pool& here, const model::Pool& spot,
                        double work_hours, double restore_hours, double checkpoint_hours) {
  double rate = std::max(0.0, spot.preemption_rate_per_node_hour);
  double stint = rate > 0 ? std::min(work_hours, 1.0 / rate) : work_hours;
  double p_here = static_cast<double>(here.price_per_gpu_hour);
  double p_spot = static_cast<double>(spot.price_per_gpu_hour);
  double speed_here = here.speed > 0 ? here.speed : 1.0, speed_spot = spot.speed > 0 ? spot.speed : 1.0;
  // The work done in the stint would have cost this much here.
  double gain = stint * (p_here * speed_spot / speed_here - p_spot);
  double reclaim = 1.0 - std::exp(-rate * (work_hours + restore_hours));
  double cost = restore_hours * p_spot + reclaim * (restore_hours * p_here + checkpoint_hours / 2 * p_spot);
  return gpus * (gain - cost);
}

void MigrateToSpot(const model::Snapshot& s, FreeRoom& cap, const PolicyConfig& config,
                   model::Plan& plan, const SpotBook* book) {
  std::set<model::JobId> stopped;
  for (const auto& st : plan.stops) stopped.insert(st.job_id);
  const QuotaBook quotas(s);
  const bool any_quota = !s.quotas.empty();
  for (const auto& [job_id, m] : CheckpointedJobs(s)) {
    const model::RunningAttempt& a = *m.first;
    int here_entry = cap.EntryOfNode(a.node_id);
    // Reserved capacity is paid for whether used or not: only on-demand is worth leaving.
    if (stopped.count(job_id) || here_entry < 0 ||
        cap.entry(here_entry).pool.kind != model::CapacityKind::kOnDemand)
      continue;
    const model::Pool& here = cap.entry(here_entry).pool;
    Work work = MoveWork(a, m.gpus, config);
    double safe_hours = SafeFallback(cap, a, work, m.gpus, config).first;
    if (safe_hours >= kNoLimit) safe_hours = SafeHours(work, here);
    DeadlineView view = ViewDeadline(a.deadline, s.now, safe_hours, config);
    const DeadlineView learned_view =
        ViewDeadline(a.deadline, s.now, safe_hours, config, DeadlineGuard::kController);
    int best = -1;
    double best_saving = 0;
    Estimate best_est;
    for (int e = 0; e < cap.size(); ++e) {
      const PoolEntry& pe = cap.entry(e);
      if (pe.pool.kind != model::CapacityKind::kSpot || pe.derived) continue;
      if (!PoolFits(a.gpu_types, a.min_gpu_mem_gb, pe.pool)) continue;
      if (cap.Usable(e, m.gpus, config.spread_large_jobs) < m.gpus) continue;
      if (any_quota && !quotas.Allows(a.team_id, pe.pool, m.gpus)) continue;
      Estimate est = EstimateOn(work, pe.pool, 1, false);
      if (auto d = LearnedRunning(book, s, a, work, learned_view, pe.pool, JobWhere::kOnDemand,
                                  OnDemandRefPriceFor(cap, a), config)) {
        if (d->action != SpotAction::kSpot) continue;
        // The controller priced the changeovers: the move's worth is the price difference.
        double saving = m.gpus * std::max(1.0, est.run_hours) *
                        (static_cast<double>(here.price_per_gpu_hour) -
                         static_cast<double>(pe.pool.price_per_gpu_hour));
        if (saving > best_saving) best = e, best_saving = saving, best_est = est;
        continue;
      }
      if (!SpotCovered(est, view)) continue;
      double saving = MoveToSpotSaving(m.gpus, here, pe.pool, est.run_hours - work.restore_hours,
                                       work.restore_hours, work.checkpoint_hours);
      if (saving > best_saving) best = e, best_saving = saving, best_est = est;
    }
    if (best < 0) continue;
    if (cap.Take(best, m.gpus, config.spread_large_jobs).empty()) continue;
    std::string reason = ReturnReason(here, cap.entry(best).pool, view, best_est,
                                      static_cast<Micros>(std::llround(best_saving)));
    for (const auto* p : m.parts)
      plan.stops.push_back({p->attempt_id, p->job_id, model::StopKind::kMigrateToSpot, reason});
  }
}

}  // namespace frugal::policy
