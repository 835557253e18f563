// An online reference for the single-job problem: the policy that is optimal in expectation
// when spot availability follows a known Markov chain. The chain's states are (up or down,
// age of the current spell in bins), so the hazard of a reclaim or of a return may depend on
// how long the spell has lasted (a semi-Markov model); with one bin it is the two-state chain
// of the learned reclaim rate and mean outage. A dynamic program over (steps left, work
// left, instance state, chain state) gives the best action in every state; the controller
// looks it up each step. A miss is priced as infinite, so the policy never risks one.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "bench/sim/single_job_sim.h"
#include "scheduler/model/availability.h"
#include "scheduler/policy/placement/spot_dp.h"

namespace frugal::sim {

struct SpotChain {
  std::vector<uint8_t> up;                                // per state
  std::vector<std::vector<std::pair<int, double>>> next;  // per state: (state, probability)
  std::vector<int> bin_start;                             // first age of each bin (steps)
  double spot_price = 0.3;                                // per step, on-demand = 1
  int State(bool is_up, int age) const;                   // age: steps the spell has lasted
  // The same chain in the scheduler's terms (policy/spot_dp.h).
  std::vector<std::vector<model::AvailabilityModel::Next>> Transitions() const;
};

// The chain of a learned model (the scheduler's, model/availability.h) with its prior.
SpotChain ChainOf(const model::AvailabilityModel& model, const model::AvailabilityPrior& prior,
                  double spot_ratio);

// Fits a chain on steps [from, to) of a zone with `bins` age bins per side (1: memoryless).
SpotChain FitChain(const Zone& zone, int from, int to, int bins, double spot_ratio);
// The chain of a single-zone market's zone on steps [0, to), its spot price the mean price
// over those steps relative to on-demand.
SpotChain FitMarketChain(const Market& m, int to, int bins);

class ChainDpTable {
 public:
  // Solves for jobs of at most `max_work` steps due within `max_time` steps.
  ChainDpTable(const SpotChain& chain, int max_time, int max_work, int changeover, int checkpoint);
  // Best target for the view (kIdle, kOnDemand or zone 0); `state` is the chain's state now.
  // A job the table was not solved for (more work, another changeover or checkpoint
  // interval) gets on-demand.
  int Action(const StepView& v, int state) const;
  // Expected cost, in on-demand steps, of the widest job (max_time, max_work) submitted
  // idle in chain state `state` and run by this table's actions.
  double ExpectedCost(int state) const { return policy_.StartValue(state); }

  // The scheduler's policy (policy/spot_dp.h): the simulator and the scheduler decide with
  // one implementation.
  const policy::SpotPolicy& policy() const { return policy_; }

 private:
  int D_, C_;
  policy::SpotPolicy policy_;
};
// Where the engine's view is, in the scheduler's DP terms.
policy::SpotJobState DpState(const StepView& v, int chain_state);

class ChainDpController final : public Controller {
 public:
  ChainDpController(const ChainDpTable& table, const SpotChain& chain)
      : table_(table), chain_(chain) {}
  std::string Name() const override { return "model-optimal"; }
  int Decide(const StepView& v) override;

 private:
  const ChainDpTable& table_;
  const SpotChain& chain_;
};

}  // namespace frugal::sim
