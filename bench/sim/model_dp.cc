#include "bench/sim/model_dp.h"

#include <algorithm>
#include <cmath>

namespace frugal::sim {

namespace {
constexpr double kInf = 1e18;
}  // namespace

int SpotChain::State(bool is_up, int age) const {
  const int bins = static_cast<int>(bin_start.size());
  int b = static_cast<int>(std::upper_bound(bin_start.begin(), bin_start.end(), age) -
                           bin_start.begin()) -
          1;
  b = std::clamp(b, 0, bins - 1);
  return (is_up ? 0 : bins) + b;
}

SpotChain FitChain(const Zone& zone, int from, int to, int bins, double spot_ratio) {
  SpotChain c;
  c.spot_price = spot_ratio;
  // Bins of age growing geometrically (widths 1, 2, 3, 4, 7, 10, 17, 27, ... steps): hazards
  // change fast early.
  int start = 0;
  for (int b = 0; b < bins; ++b) {
    c.bin_start.push_back(start);
    start += std::max(1, static_cast<int>(std::lround(std::pow(1.6, b))));
  }
  const int S = 2 * bins;
  c.up.assign(S, 0);
  for (int s = 0; s < bins; ++s) c.up[s] = 1;
  // Counts: per state, to the flip, the same bin, the next bin. A weak prior keeps every
  // transition possible (a state never seen leaves by each way with about 5% a step).
  std::vector<double> flip(S, 0.05), same(S, 1), onward(S, 0.05);
  to = std::min<int>(to, static_cast<int>(zone.up.size()));
  from = std::max(0, from);
  int age = 0;
  for (int j = from; j + 1 < to; ++j) {
    if (j > from && zone.up[j] != zone.up[j - 1]) age = 0;
    int s = c.State(zone.up[j], age);
    if (zone.up[j + 1] != zone.up[j]) {
      flip[s] += 1;
    } else if (c.State(zone.up[j], age + 1) != s) {
      onward[s] += 1;
    } else {
      same[s] += 1;
    }
    ++age;
  }
  c.next.resize(S);
  for (int s = 0; s < S; ++s) {
    bool is_up = c.up[s];
    int b = is_up ? s : s - bins;
    double n = flip[s] + same[s] + onward[s];
    int flip_to = is_up ? bins : 0;  // the other side, age 0
    c.next[s].push_back({flip_to, flip[s] / n});
    if (b + 1 < bins) {
      c.next[s].push_back({s, same[s] / n});
      c.next[s].push_back({s + 1, onward[s] / n});
    } else {
      c.next[s].push_back({s, (same[s] + onward[s]) / n});
    }
  }
  return c;
}

SpotChain FitMarketChain(const Market& m, int to, int bins) {
  to = std::clamp(to, 0, m.steps);
  double price = 0;
  for (int j = 0; j < to; ++j) price += m.zones[0].price[j];
  return FitChain(m.zones[0], 0, to, bins, to > 0 ? price / to / m.od_price : 1);
}

ChainDpTable::ChainDpTable(const SpotChain& chain, int max_time, int max_work, int changeover,
                           int checkpoint)
    : T_(max_time), W_(max_work), D_(std::max(1, changeover)), C_(std::max(1, checkpoint)) {
  // Modes: 0 idle; 1..D od changeover k; D+1 od running; D+2.. spot changeover k;
  // 2D+2.. spot running with u unsaved steps. Spot modes exist only in up states.
  const int D = D_, C = C_;
  M_ = 2 + 2 * D + C;
  S_ = static_cast<int>(chain.up.size());
  const int M = M_, S = S_;
  const int kOdRun = D + 1, kSpotC = D + 2, kSpotR = 2 * D + 2;
  const double p = chain.spot_price;
  const size_t cell = static_cast<size_t>(M) * S;  // per (tau, w)
  const size_t row = static_cast<size_t>(W_ + 1) * cell;
  act_.assign(static_cast<size_t>(T_ + 1) * row, 0);
  std::vector<double> prev(row, kInf), cur(row, kInf);
  std::fill(prev.begin(), prev.begin() + cell, 0.0);  // tau = 0: done only when no work is left
  auto V = [&](int w, int m, int s) {
    return w > W_ ? kInf : prev[static_cast<size_t>(w) * cell + static_cast<size_t>(m) * S + s];
  };
  // Backwards in steps left: each layer needs only the one before it.
  for (int tau = 1; tau <= T_; ++tau) {
    uint8_t* act = &act_[static_cast<size_t>(tau) * row];
    std::fill(cur.begin(), cur.begin() + cell, 0.0);
    for (int w = 1; w <= W_; ++w) {
      for (int m = 0; m < M; ++m) {
        for (int s = 0; s < S; ++s) {
          const size_t at = static_cast<size_t>(w) * cell + static_cast<size_t>(m) * S + s;
          const bool up = chain.up[s];
          if (m >= kSpotC && !up) {
            cur[at] = kInf;
            continue;
          }
          const auto& nx = chain.next[s];
          // Expected value after this step: at (w_up, m_up) if spot is up next step, at
          // (w_dn, m_dn) if it is down (a reclaim, for a job on spot).
          auto expect = [&](int w_up, int m_up, int w_dn, int m_dn) {
            double e = 0;
            for (const auto& [s1, pr] : nx)
              e += pr * (chain.up[s1] ? V(w_up, m_up, s1) : V(w_dn, m_dn, s1));
            return e;
          };
          double best = expect(w, 0, w, 0);
          int choice = 0;
          double od;
          if (m == kOdRun) {
            od = 1 + (w == 1 ? 0 : expect(w - 1, kOdRun, w - 1, kOdRun));
          } else {
            int k = (m >= 1 && m <= D) ? m : D;
            int m1 = k - 1 >= 1 ? k - 1 : kOdRun;
            od = 1 + expect(w, m1, w, m1);
          }
          if (od < best) best = od, choice = 1;
          if (up) {
            double sp;
            if (m >= kSpotR) {
              int u = m - kSpotR + 1;
              if (u == C) u = 0;
              sp = p + (w == 1 ? 0 : expect(w - 1, kSpotR + u, w - 1 + u, 0));
            } else {
              int k = (m >= kSpotC && m < kSpotR) ? m - kSpotC + 1 : D;
              int m1 = k - 1 >= 1 ? kSpotC + k - 2 : kSpotR;
              sp = p + expect(w, m1, w, 0);
            }
            if (sp < best) best = sp, choice = 2;
          }
          cur[at] = std::min(best, kInf);
          act[at] = static_cast<uint8_t>(choice);
        }
      }
    }
    std::swap(prev, cur);
  }
  start_values_.assign(prev.begin() + static_cast<size_t>(W_) * cell,
                       prev.begin() + static_cast<size_t>(W_) * cell + S);
}

int ChainDpTable::Mode(const JobView& v) const {
  const int D = D_;
  if (v.where == kIdle) return 0;
  if (v.where == kOnDemand) return v.changeover_left > 0 ? std::min(v.changeover_left, D) : D + 1;
  if (v.changeover_left > 0) return D + 2 + std::min(v.changeover_left, D) - 1;
  return 2 * D + 2 + std::clamp(v.progress - v.saved, 0, C_ - 1);
}

int ChainDpTable::Action(const JobView& v, int state) const {
  // A job the table was not solved for: on-demand keeps its deadline whatever the table says.
  if (v.RemainingWork() > W_ || std::max(1, v.job->changeover) != D_ ||
      std::max(1, v.job->checkpoint) != C_)
    return kOnDemand;
  // Fewer steps left than the job has is conservative: the policy plans with less slack.
  const int tau = std::clamp(v.RemainingTime(), 0, T_);
  const int w = std::max(0, v.RemainingWork());
  const size_t cell = static_cast<size_t>(M_) * S_;
  const size_t row = static_cast<size_t>(W_ + 1) * cell;
  switch (act_[static_cast<size_t>(tau) * row + static_cast<size_t>(w) * cell +
               static_cast<size_t>(Mode(v)) * S_ + state]) {
    case 1:
      return kOnDemand;
    case 2:
      return 0;
    default:
      return kIdle;
  }
}

int ChainDpController::Decide(const JobView& v) {
  const Zone& z = v.market->zones[0];
  bool up = v.market->Up(0, v.step);
  // Ages past the last bin's start share its state: no need to look further back.
  const int oldest = chain_.bin_start.back();
  int age = 0;
  for (int j = v.step - 1; j >= 0 && (z.up[j] != 0) == up && age < oldest; --j) ++age;
  return table_.Action(v, chain_.State(up, age));
}

}  // namespace frugal::sim
