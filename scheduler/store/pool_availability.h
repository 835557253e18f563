// What the store knows of a spot pool's availability (issue 14, decision 0023): the
// evidence behind its learned chain (imported and observed), the last refit, and where the
// pool stands now. Read by GET /v1/admin/pools/{name}/availability; the policy gets the
// fitted chain through model::Pool::availability instead.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.h"
#include "scheduler/model/availability.h"

namespace frugal::store {

struct PoolAvailability {
  std::string pool;
  model::AvailabilityNow now;    // up = the pool has a live node now (not under notice)
  double observed_ticks = 0;     // ticks of evidence from node lives, at the last refit
  double imported_ticks = 0;     // ticks of evidence from an admin's import
  std::string imported_source;   // e.g. "traces.csv zone us-east-1a column available, step 195 s"
  std::optional<Timestamp> imported_at;
  std::optional<Timestamp> fitted_at;  // empty: never refitted (the policy has no model)
  double refit_ms = 0;                 // how long the last refit of this pool took
  std::optional<model::AvailabilityModel> model;  // the fitted counts, when fitted
  // The prior the hazards are shown with (model::PriorFor of the pool's admin settings).
  model::AvailabilityPrior prior;
};

// One pool's refit, for the log and the refit-time measurement.
struct RefitResult {
  std::string pool;
  int lives = 0;              // node lives read
  double observed_ticks = 0;  // ticks of evidence from them
  double elapsed_ms = 0;      // reading, fitting and writing this pool
};

}  // namespace frugal::store
