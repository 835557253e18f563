// The policy's knobs as the scheduler runs them: PolicyConfig's defaults (which are what
// production runs) with what the scheduler config sets in their place (config/config.h,
// placement/cost's knobs). Part of the composition root: config/ does not know the policy,
// and the policy does not read config files.
#pragma once

#include "config/config.h"
#include "scheduler/policy/policy_config.h"

namespace frugal::app {

// Each knob the config sets replaces PolicyConfig's default; the rest stay.
policy::PolicyConfig PolicyConfigFor(const config::SchedulerConfig& cfg);

}  // namespace frugal::app
