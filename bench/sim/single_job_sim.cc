#include "bench/sim/single_job_sim.h"

namespace frugal::sim {

RunResult RunJob(const Market& m, const JobShape& job, Controller& c, bool record) {
  RunResult r;
  c.Reset();
  StepView v;
  v.market = &m;
  v.job = &job;
  int run_in_attempt = 0;
  const int step_s = m.step_seconds;
  const long long work_s = static_cast<long long>(job.work) * step_s;
  const double step_cost = m.StepHours() * m.instances;
  auto set_progress = [&](int progress_s, int saved_s) {
    v.progress_seconds = progress_s;
    v.saved_seconds = saved_s;
    v.progress = progress_s / step_s;
    v.saved = saved_s / step_s;
  };
  // A job that is never done would loop forever: past the deadline the engine runs it on
  // on-demand, so it ends within work + changeover more steps; the bound is a safety stop.
  const int limit = job.deadline + job.work + job.changeover + 1;
  for (v.t = 0; v.t <= limit; ++v.t) {
    v.step = job.start + v.t;
    v.reclaimed_zone = -1;
    if (v.where >= 0 && !m.Up(v.where, v.step)) {
      const int lost = ReclaimLossSeconds(m, v.where, job, v.progress_seconds - v.saved_seconds);
      r.lost_seconds += lost;
      r.lost_steps += (lost + step_s - 1) / step_s;
      // What the final write saved is a checkpoint; what it could not save is gone.
      set_progress(v.progress_seconds - lost, v.progress_seconds - lost);
      v.reclaimed_zone = v.where;
      v.where = kIdle;
      ++r.reclaims;
      ++v.reclaims;
    }
    int target;
    if (v.t >= job.deadline) {
      r.missed = true;
      target = v.where == kIdle ? kOnDemand : v.where;
    } else {
      target = c.Decide(v);
    }
    if (target >= 0 && !m.Up(target, v.step)) target = kIdle;
    if (target != v.where) {
      if (v.where != kIdle && v.changeover_left == 0 && v.saved_seconds != v.progress_seconds) {
        set_progress(v.progress_seconds, v.progress_seconds);  // a stop order checkpoints
        v.last_checkpoint = v.t;
      }
      v.where = target;
      if (target != kIdle) {
        v.changeover_left = job.changeover;
        v.attempt_start = v.t;
        run_in_attempt = 0;
        ++r.launches;
      }
    }
    Phase phase = Phase::kIdle;
    if (v.where != kIdle) {
      r.cost += m.Price(v.where, v.step) * step_cost;
      (v.where == kOnDemand ? r.od_steps : r.spot_steps) += 1;
      if (v.changeover_left > 0) {
        --v.changeover_left;
        phase = Phase::kChangeover;
      } else {
        phase = Phase::kRunning;
        const int progress_s = v.progress_seconds + step_s;
        if (++run_in_attempt % job.checkpoint == 0) {
          set_progress(progress_s, progress_s);
          v.last_checkpoint = v.t + 1;
        } else {
          set_progress(progress_s, v.saved_seconds);
        }
      }
    }
    if (record) r.timeline.push_back({v.where, phase, v.progress});
    if (v.progress_seconds >= work_s) {
      r.finish = v.t + 1;
      r.missed = r.finish > job.deadline;
      return r;
    }
  }
  r.finish = limit;
  r.missed = true;
  return r;
}

}  // namespace frugal::sim
