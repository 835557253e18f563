// Frugal in the single-job engine: the real placement/cost policy (frugal_policy), called
// with a model::Snapshot built from the simulated world at each decision point, and its
// Plan applied as the engine applies one. Nothing of the policy is re-implemented here:
// this file only translates the market into pools and nodes and the plan back into where
// the job runs.
//
// The world as the scheduler would see it with spot nodes that join by themselves (the
// local provider's model, decision 0006): an on-demand pool whose nodes are always there,
// and per zone a spot pool whose nodes exist while the zone is up. The changeover d is the
// policy's restore_time. The spot pool's reclaim rate is learned as the store learns it
// (model::LearnedPreemptionRate) from the zone's history before `now`.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "bench/sim/single_job_sim.h"
#include "scheduler/model/snapshot.h"
#include "scheduler/policy/policy.h"

namespace frugal::sim {

struct FrugalOptions {
  // The admin's prior for a spot pool's reclaims per node-hour (the store blends it with
  // observed notices). One generic value for every series: not tuned to any.
  double prior_per_node_hour = 0.1;
  // Decide at least every this many steps while the job runs (always when it waits, and
  // whenever a pool's availability or price changes): the engine's timer.
  int cycle_steps = 1;
  // The availability model is learned from market steps before this one only (issue 14:
  // every Frugal figure learns from the past). -1: from every step before the decision.
  // Experiments that submit in a series' second half set it to the split.
  int learn_until_step = -1;
};

class FrugalController final : public Controller {
 public:
  // `policy` must outlive the controller; it is shared read-only (Decide is const).
  FrugalController(const policy::Policy& policy, FrugalOptions options = {})
      : policy_(policy), options_(options) {}
  std::string Name() const override { return "frugal"; }
  void Reset() override;
  int Decide(const StepView& v) override;

  // The snapshot the engine would load for this view (the job pending when `pending`).
  model::Snapshot SnapshotFor(const StepView& v, bool pending) const;
  int decisions() const { return decisions_; }
  // Sees every snapshot and plan (frugal_sim --explain prints them).
  using Observer = std::function<void(const StepView&, const model::Snapshot&, const model::Plan&)>;
  void set_observer(Observer observer) { observer_ = std::move(observer); }

 private:
  // Where the plan puts job 1: a zone, kOnDemand, kIdle (stopped), or `stay`.
  int Apply(const model::Plan& plan, const StepView& v, int stay) const;
  bool MarketChanged(const StepView& v) const;
  int DecideOnce(const StepView& v, bool pending, int stay);

  const policy::Policy& policy_;
  FrugalOptions options_;
  int last_decision_t_ = -1000000;
  int decisions_ = 0;
  Observer observer_;
};

// Ids in the simulated snapshot: job 1; pool zone+1 for spot, kOnDemandPool for on-demand.
inline constexpr model::JobId kSimJob = 1;
inline constexpr model::PoolId kOnDemandPool = 100;
// The learned availability model of `zone` (the chain's bins of experiments 1-3) fitted on
// the market's steps [0, end). A new object each call: callers that want runs on the same
// past to share solved tables (the SpotBook keys on the model) keep the one they got.
std::shared_ptr<const model::AvailabilityModel> FitModel(const Market& m, int zone, int end);
// Where an online fit at `step` ends: the last daily refit at or before it (the store
// refits in the background; a refit changes every table, which costs seconds to solve).
int OnlineFitEnd(const Market& m, int step);
// The simulated clock: market step 0 is this instant.
Timestamp SimTime(const Market& m, int step);

}  // namespace frugal::sim
