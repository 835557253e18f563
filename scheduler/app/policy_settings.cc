#include "scheduler/app/policy_settings.h"

namespace frugal::app {

policy::PolicyConfig PolicyConfigFor(const config::SchedulerConfig& cfg) {
  // The defaults are production's: a job asks for nodes to span them (multi_node_gangs,
  // on), and one that did not is never spread (spread_large_jobs, off), since its program
  // would not know its rank (decision 0032).
  policy::PolicyConfig p;
  if (cfg.min_run_time) p.min_run_time = *cfg.min_run_time;
  if (cfg.restore_time) p.restore_time = *cfg.restore_time;
  if (cfg.wait_horizon) p.wait_horizon = *cfg.wait_horizon;
  if (cfg.max_wait_without_deadline) p.max_wait_without_deadline = *cfg.max_wait_without_deadline;
  if (cfg.fair_share_half_life) p.fair_share_half_life = *cfg.fair_share_half_life;
  if (cfg.max_preemptions_per_cycle) p.max_preemptions_per_cycle = *cfg.max_preemptions_per_cycle;
  if (cfg.learned_spot_control) p.learned_spot_control = *cfg.learned_spot_control;
  return p;
}

}  // namespace frugal::app
