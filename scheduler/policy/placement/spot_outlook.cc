#include "scheduler/policy/placement/spot_outlook.h"

#include <cmath>
#include <cstdio>

#include "scheduler/policy/placement/cost_model.h"

namespace frugal::policy {

namespace {

constexpr int kPaths = 400;  // Monte Carlo paths: the mean to within a few percent

std::string Money(double micros) {
  char b[32];
  std::snprintf(b, sizeof b, "$%.0f", micros / 1e6);
  return b;
}

}  // namespace

std::vector<SpotOutlook> SpotOutlooks(const model::PendingJob& job,
                                      const std::vector<model::Pool>& pools, Timestamp now,
                                      const PolicyConfig& config, const SpotBook& book) {
  std::vector<SpotOutlook> out;
  if (!job.deadline || !MayRunOn(job.tolerance, model::CapacityKind::kSpot)) return out;
  const Work work = WorkOf(job, config);
  double od_ref = 0, safe_hours = kNoLimit;
  for (const auto& p : pools) {
    if (!PoolFits(job.gpu_types, job.min_gpu_mem_gb, p) || !IsSafe(p.kind)) continue;
    safe_hours = std::min(safe_hours, SafeHours(work, p));
    if (p.kind != model::CapacityKind::kOnDemand) continue;
    double per_ref = static_cast<double>(p.price_per_gpu_hour) / (p.speed > 0 ? p.speed : 1.0);
    if (od_ref == 0 || per_ref < od_ref) od_ref = per_ref;
  }
  if (od_ref <= 0) return out;
  const DeadlineView view =
      ViewDeadline(job.deadline, now, safe_hours, config, DeadlineGuard::kController);
  for (const auto& p : pools) {
    if (p.kind != model::CapacityKind::kSpot || !p.availability ||
        !PoolFits(job.gpu_types, job.min_gpu_mem_gb, p))
      continue;
    const double speed = p.speed > 0 ? p.speed : 1.0;
    SpotJob sj;
    sj.time_left_hours = view.left_hours - view.margin_hours;
    sj.work_hours = work.ref_hours / speed;
    sj.restore_hours = std::max(work.restore_hours, Hours(config.restore_time));
    sj.checkpoint_hours =
        job.tolerance == model::Tolerance::kCheckpointed ? work.checkpoint_hours : 0;
    sj.od_price_per_gpu_hour = od_ref * speed;
    sj.nodes = work.nodes;
    SpotOutlook o;
    o.pool_id = p.id;
    o.pool = p.name;
    o.up = p.availability_now.up;
    o.spell_seconds = p.availability_now.spell_seconds;
    auto d = book.Decide(p, sj);
    if (!d && work.nodes > 1 && !p.gang_availability.count(work.nodes)) {
      o.text = "spot " + p.name + ": no availability model for gangs of " +
               std::to_string(work.nodes) + " nodes yet (the next refit fits one); the rules" +
               " decide until then";
      out.push_back(std::move(o));
      continue;
    }
    if (!d) {
      o.text = "spot " + p.name + ": the learned model's table for this job is being solved;" +
               " the rules decide until it is";
      out.push_back(std::move(o));
      continue;
    }
    o.ready = true;
    o.action = d->action;
    o.hazard = d->hazard;
    SpotForecast f = Forecast(*d->table, d->chain->next, d->chain->up, d->state, kPaths,
                              static_cast<std::uint64_t>(job.id) * 7919 + p.id);
    const double per_tick = sj.od_price_per_gpu_hour * d->tick_hours * job.gpus;
    o.expected_cost = static_cast<Micros>(std::llround(f.mean_cost * per_tick));
    o.cost_sd = static_cast<Micros>(std::llround(f.sd_cost * per_tick));
    o.reclaims = f.reclaims;
    o.deadline_risk = f.miss_risk;
    char b[256];
    std::snprintf(b, sizeof b, ": expected %s ± %s, %.1f reclaims, deadline risk %.0f%%; ",
                  Money(static_cast<double>(o.expected_cost)).c_str(),
                  Money(static_cast<double>(o.cost_sd)).c_str(), f.reclaims, 100 * f.miss_risk);
    o.text = "spot " + p.name + b + DescribeSpell(p, *d) + "; the model says " +
             ToString(d->action) + " now";
    out.push_back(std::move(o));
  }
  return out;
}

}  // namespace frugal::policy
