#include "bench/sim/model_dp.h"

#include <algorithm>
#include <cmath>

namespace frugal::sim {

int SpotChain::State(bool is_up, int age) const {
  const int bins = static_cast<int>(bin_start.size());
  int b = static_cast<int>(std::upper_bound(bin_start.begin(), bin_start.end(), age) -
                           bin_start.begin()) -
          1;
  b = std::clamp(b, 0, bins - 1);
  return (is_up ? 0 : bins) + b;
}

std::vector<std::vector<model::AvailabilityModel::Next>> SpotChain::Transitions() const {
  std::vector<std::vector<model::AvailabilityModel::Next>> out(next.size());
  for (size_t s = 0; s < next.size(); ++s)
    for (const auto& [to, p] : next[s]) out[s].push_back({to, p});
  return out;
}

SpotChain ChainOf(const model::AvailabilityModel& model, const model::AvailabilityPrior& prior,
                  double spot_ratio) {
  SpotChain c;
  c.spot_price = spot_ratio;
  c.bin_start = model.bin_start;
  c.up.resize(model.states());
  for (int s = 0; s < model.states(); ++s) c.up[s] = model.IsUp(s) ? 1 : 0;
  auto tr = model.Transitions(prior.prior_ticks, prior.up_end, prior.down_end);
  c.next.resize(tr.size());
  for (size_t s = 0; s < tr.size(); ++s)
    for (const auto& n : tr[s]) c.next[s].push_back({n.state, n.p});
  return c;
}

SpotChain FitChain(const Zone& zone, int from, int to, int bins, double spot_ratio) {
  // The scheduler's model (model/availability.h), counted over the zone's steps. Its prior
  // here is weak, one tick per state with 5% ends a step: every transition stays possible.
  model::AvailabilityModel m = model::AvailabilityModel::Empty(180, bins);
  to = std::min<int>(to, static_cast<int>(zone.up.size()));
  from = std::max(0, from);
  if (to > from) m.AddSeries(std::vector<std::uint8_t>(zone.up.begin() + from, zone.up.begin() + to));
  return ChainOf(m, model::AvailabilityPrior{1.0, 0.05, 0.05}, spot_ratio);
}

SpotChain FitMarketChain(const Market& m, int to, int bins) {
  to = std::clamp(to, 0, m.steps);
  double price = 0;
  for (int j = 0; j < to; ++j) price += m.zones[0].price[j];
  return FitChain(m.zones[0], 0, to, bins, to > 0 ? price / to / m.od_price : 1);
}

namespace {
policy::SpotDpShape ShapeOf(const SpotChain& chain, int max_time, int max_work, int changeover,
                            int checkpoint) {
  policy::SpotDpShape s;
  s.max_time = max_time;
  s.max_work = max_work;
  s.changeover = changeover;
  s.checkpoint = checkpoint;
  s.spot_price = chain.spot_price;
  return s;
}
}  // namespace

ChainDpTable::ChainDpTable(const SpotChain& chain, int max_time, int max_work, int changeover,
                           int checkpoint)
    : D_(std::max(1, changeover)),
      C_(std::max(1, checkpoint)),
      policy_(chain.Transitions(), chain.up,
              ShapeOf(chain, max_time, max_work, changeover, checkpoint)) {}

policy::SpotJobState DpState(const StepView& v, int chain_state) {
  policy::SpotJobState s;
  s.time_left = v.RemainingTime();
  s.work_left = std::max(0, v.RemainingWork());
  s.where = v.where == kIdle       ? policy::JobWhere::kIdle
            : v.where == kOnDemand ? policy::JobWhere::kOnDemand
                                   : policy::JobWhere::kSpot;
  s.changeover_left = v.changeover_left;
  s.unsaved = v.progress - v.saved;
  s.chain_state = chain_state;
  return s;
}

int ChainDpTable::Action(const StepView& v, int state) const {
  // A job the table was not solved for: on-demand keeps its deadline whatever the table says.
  if (std::max(1, v.job->changeover) != D_ || std::max(1, v.job->checkpoint) != C_)
    return kOnDemand;
  // Fewer steps left than the job has is conservative: the policy plans with less slack.
  switch (policy_.Action(DpState(v, state))) {
    case policy::SpotAction::kOnDemand:
      return kOnDemand;
    case policy::SpotAction::kSpot:
      return 0;
    case policy::SpotAction::kWait:
      return kIdle;
  }
  return kOnDemand;
}

int ChainDpController::Decide(const StepView& v) {
  const Zone& z = v.market->zones[0];
  bool up = v.market->Up(0, v.step);
  // Ages past the last bin's start share its state: no need to look further back.
  const int oldest = chain_.bin_start.back();
  int age = 0;
  for (int j = v.step - 1; j >= 0 && (z.up[j] != 0) == up && age < oldest; --j) ++age;
  return table_.Action(v, chain_.State(up, age));
}

}  // namespace frugal::sim
