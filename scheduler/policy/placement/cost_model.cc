#include "scheduler/policy/placement/cost_model.h"

#include <algorithm>
#include <cmath>

namespace frugal::policy {

double Hours(Seconds s) { return static_cast<double>(s.count()) / 3600.0; }

double HoursBetween(Timestamp from, Timestamp to) {
  return std::chrono::duration<double>(to - from).count() / 3600.0;
}

namespace {

Work BaseWork(int gpus, std::optional<Seconds> estimate, double progress,
              model::Tolerance tolerance, std::optional<Seconds> interval,
              const PolicyConfig& config) {
  Work w;
  w.gpus = std::max(1, gpus);
  w.estimated = estimate.has_value() && estimate->count() > 0;
  double total = Hours(w.estimated ? *estimate : config.default_estimate);
  // Bad data (progress outside 0..1) must not produce negative or inflated work.
  double done = std::clamp(std::isfinite(progress) ? progress : 0.0, 0.0, 1.0);
  w.ref_hours = total * (1.0 - done);
  w.tolerance = tolerance;
  if (tolerance == model::Tolerance::kCheckpointed) {
    bool given = interval.has_value() && interval->count() > 0;
    w.checkpoint_hours = Hours(given ? *interval : config.default_checkpoint_interval);
  }
  w.restore_hours = Hours(config.restore_time);
  w.resumes = done > 0 && tolerance == model::Tolerance::kCheckpointed;
  return w;
}

}  // namespace

Work WorkOf(const model::PendingJob& job, const PolicyConfig& config) {
  Work w = BaseWork(job.gpus, job.estimate, job.progress, job.tolerance, job.checkpoint_interval,
                    config);
  w.nodes = std::max(1, job.nodes);
  return w;
}

Work WorkOf(const model::RunningAttempt& a, const PolicyConfig& config) {
  return BaseWork(a.gpus, a.estimate, a.progress, a.tolerance, a.checkpoint_interval, config);
}

int NodesSpanned(int gpus, int node_gpus) {
  if (node_gpus <= 0 || gpus <= node_gpus) return 1;
  return (gpus + node_gpus - 1) / node_gpus;
}

Estimate EstimateOn(const Work& work, const model::Pool& pool, int nodes, bool new_node) {
  Estimate e;
  double speed = pool.speed > 0 ? pool.speed : 1.0;
  e.run_hours = work.ref_hours / speed + (work.resumes ? work.restore_hours : 0.0);
  if (pool.kind == model::CapacityKind::kSpot) {
    // A gang's nodes are reclaimed together (a zone out of capacity takes them all), so the
    // gang sees the pool's rate per node-hour, not that rate times its nodes: the store
    // learns notices / node-hours, which for whole-zone reclaims is reclaims per hour.
    (void)nodes;
    double rate = std::max(0.0, pool.preemption_rate_per_node_hour);
    double per_reclaim, worst;
    if (work.tolerance == model::Tolerance::kCheckpointed) {
      // Reclaims land uniformly between checkpoints: half an interval lost on average.
      double interval = std::min(work.checkpoint_hours, e.run_hours);
      per_reclaim = interval / 2 + work.restore_hours;
      worst = interval + work.restore_hours;
    } else {
      per_reclaim = e.run_hours / 2;  // a restart loses everything done so far
      worst = e.run_hours;
    }
    e.rework_hours = rate * e.run_hours * per_reclaim;
    e.loss_hours = worst;
    e.wall_hours = e.run_hours + e.rework_hours;
    e.preemptions = rate * e.wall_hours;
  } else {
    e.wall_hours = e.run_hours;
  }
  e.startup_hours = new_node ? Hours(pool.startup_delay) : 0.0;
  double micros = static_cast<double>(pool.price_per_gpu_hour) * work.gpus * e.wall_hours;
  e.cost = static_cast<Micros>(std::llround(std::min(micros, 9e18)));
  return e;
}

double DecisionRate(const Work& work, const model::Pool& pool, const Estimate& e,
                    const PolicyConfig& config) {
  double price = static_cast<double>(std::max<Micros>(0, pool.price_per_gpu_hour));
  // Per reference hour: a pool twice as fast at the same price costs half per unit of work.
  double rate = work.ref_hours > 0 ? price * e.wall_hours / work.ref_hours
                                   : price / (pool.speed > 0 ? pool.speed : 1.0);
  if (pool.kind == model::CapacityKind::kReserved) rate *= config.reserved_cost_weight;
  return rate;
}

bool PoolFits(const std::vector<std::string>& gpu_types, std::optional<int> min_gpu_mem_gb,
              const model::Pool& pool) {
  if (!gpu_types.empty() &&
      std::find(gpu_types.begin(), gpu_types.end(), pool.gpu_type) == gpu_types.end())
    return false;
  return !min_gpu_mem_gb || pool.gpu_mem_gb >= *min_gpu_mem_gb;
}

bool IsSafe(model::CapacityKind kind) { return kind != model::CapacityKind::kSpot; }

bool MayRunOn(model::Tolerance tolerance, model::CapacityKind kind) {
  return IsSafe(kind) || tolerance != model::Tolerance::kNone;
}

double SafeHours(const Work& work, const model::Pool& pool) {
  Estimate e = EstimateOn(work, pool, 1, pool.kind != model::CapacityKind::kReserved);
  return e.startup_hours + e.run_hours;
}

DeadlineView ViewDeadline(std::optional<Timestamp> deadline, Timestamp now, double safe_hours,
                          const PolicyConfig& config, DeadlineGuard guard) {
  DeadlineView v;
  v.safe_hours = safe_hours;
  if (!deadline) {
    v.left_hours = v.slack_hours = kNoLimit;
    return v;
  }
  v.has_deadline = true;
  v.left_hours = HoursBetween(now, *deadline);
  // The Safety Net of Can't Be Late: two changeovers (a start the run did not count, and
  // the cycle on which the switch lands) or the configured minimum, whichever is larger; a
  // fraction of the run only if configured (it grows with the job, not with the risk).
  const double changeovers = guard == DeadlineGuard::kRules ? 2 * Hours(config.restore_time) : 0.0;
  v.margin_hours = std::max({Hours(config.deadline_margin), changeovers,
                             config.deadline_margin_fraction * std::min(safe_hours, kNoLimit)});
  v.slack_hours = v.left_hours - safe_hours - v.margin_hours;
  return v;
}

double SpotRiskHours(const Estimate& spot, const DeadlineView& view) {
  // Only what one reclaim can take before the next cycle reacts: later reclaims are seen
  // and guarded when they happen (the running job is moved while slack covers one more).
  double slower = std::max(0.0, spot.startup_hours + spot.run_hours - view.safe_hours);
  return slower + spot.loss_hours;
}

double SpotReserveHours(const Estimate& spot, const DeadlineView& view, const Work& work) {
  // Each reclaim costs the slack its rework (lost work + the restore where the job goes
  // next) and, if the job went to on-demand meanwhile, one more restore to come back.
  double back = work.tolerance == model::Tolerance::kCheckpointed ? work.restore_hours : 0.0;
  return SpotRiskHours(spot, view) + spot.rework_hours + spot.preemptions * back;
}

bool SpotCovered(const Estimate& spot, const DeadlineView& view) {
  return !view.has_deadline || view.slack_hours >= SpotRiskHours(spot, view);
}

bool SafeMeets(const Estimate& safe, const DeadlineView& view) {
  return !view.has_deadline ||
         safe.startup_hours + safe.wall_hours <= view.left_hours - view.margin_hours;
}

}  // namespace frugal::policy
