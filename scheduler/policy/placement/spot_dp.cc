#include "scheduler/policy/placement/spot_dp.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace frugal::policy {

namespace {
constexpr double kInf = 1e18;
}  // namespace

const char* ToString(SpotAction a) {
  switch (a) {
    case SpotAction::kWait:
      return "wait";
    case SpotAction::kOnDemand:
      return "on-demand";
    case SpotAction::kSpot:
      return "spot";
  }
  return "?";
}

// Modes: 0 idle; 1..D on-demand with k changeover ticks left; D+1 on-demand running;
// D+2..2D+1 spot with k changeover ticks left; 2D+2.. spot running with u unsaved ticks.
// Spot modes exist only in up states (a reclaim ends them).
SpotPolicy::SpotPolicy(const std::vector<std::vector<model::AvailabilityModel::Next>>& next,
                       const std::vector<std::uint8_t>& up, const SpotDpShape& shape)
    : shape_(shape) {
  shape_.changeover = std::max(1, shape_.changeover);
  shape_.checkpoint = std::max(1, shape_.checkpoint);
  shape_.max_time = std::clamp(shape_.max_time, 1, 65535);
  shape_.max_work = std::clamp(shape_.max_work, 1, shape_.max_time);
  const int T = shape_.max_time, W = shape_.max_work, D = shape_.changeover,
            C = shape_.checkpoint;
  M_ = 2 + 2 * D + C;
  S_ = static_cast<int>(up.size());
  const int M = M_, S = S_;
  const int kOdRun = D + 1, kSpotC = D + 2, kSpotR = 2 * D + 2;
  // The mode a launch from idle (or from the other kind) enters: its first changeover tick
  // is paid this tick, so the next tick has D - 1 left, or it runs.
  const int kOdLaunch = D - 1 >= 1 ? D - 1 : kOdRun;
  const int kSpotLaunch = D - 1 >= 1 ? kSpotC + D - 2 : kSpotR;
  const double p = shape_.spot_price, od_p = shape_.od_price;
  const size_t cell = static_cast<size_t>(M) * S;  // per (tau, w)
  const size_t row = static_cast<size_t>(W + 1) * cell;
  std::vector<double> prev(row, kInf), cur(row, kInf);
  std::fill(prev.begin(), prev.begin() + cell, 0.0);  // tau = 0: done only when no work is left
  std::vector<std::uint8_t> last(row, 255);
  struct Change {
    std::uint32_t cell;
    std::uint16_t tau;
    std::uint8_t act;
  };
  std::vector<Change> changes;
  const int G = kValueGrid;
  value_rows_ = T / G + 1;
  value_cols_ = (W + G - 1) / G + 1;
  idle_values_.assign(static_cast<size_t>(value_rows_) * value_cols_ * S,
                      std::numeric_limits<float>::infinity());
  for (int c = 0; c < value_cols_; ++c)  // tau = 0: only a job with no work left is done
    for (int st = 0; st < S; ++st)
      idle_values_[static_cast<size_t>(c) * S + st] = c == 0 ? 0.0f : std::numeric_limits<float>::infinity();
  auto V = [&](int w, int m, int s) {
    return w > W ? kInf : prev[static_cast<size_t>(w) * cell + static_cast<size_t>(m) * S + s];
  };
  // Backwards in ticks left: each layer needs only the one before it.
  for (int tau = 1; tau <= T; ++tau) {
    std::fill(cur.begin(), cur.begin() + cell, 0.0);
    // More work than ticks left: the deadline is lost whatever is chosen (on-demand, the
    // lookup's default where a cell has no run yet). Not solved: a third of the work.
    const int w_top = std::min(W, tau);
    std::fill(cur.begin() + static_cast<size_t>(w_top + 1) * cell, cur.end(), kInf);
    for (int w = 1; w <= w_top; ++w) {
      for (int s = 0; s < S; ++s) {
        const bool is_up = up[s];
        const auto& nx = next[s];
        // Expected value after this tick: at (w_up, m_up) if spot is up next tick, at
        // (w_dn, m_dn) if it is down (a reclaim, for a job on spot).
        auto expect = [&](int w_up, int m_up, int w_dn, int m_dn) {
          double e = 0;
          for (const auto& n : nx) e += n.p * (up[n.state] ? V(w_up, m_up, n.state)
                                                            : V(w_dn, m_dn, n.state));
          return e;
        };
        // What does not depend on the mode, once per (w, s) rather than once per mode (the
        // solve's cost is mostly these sums): waiting, and launching on-demand or spot
        // from elsewhere.
        const double wait = expect(w, 0, w, 0);
        const double od_launch = expect(w, kOdLaunch, w, kOdLaunch);
        const double sp_launch = is_up ? expect(w, kSpotLaunch, w, 0) : kInf;
        for (int m = 0; m < M; ++m) {
          const size_t at = static_cast<size_t>(w) * cell + static_cast<size_t>(m) * S + s;
          if (m >= kSpotC && !is_up) {
            cur[at] = kInf;
            continue;
          }
          double best = wait;
          int choice = 0;
          double od;
          if (m == kOdRun) {
            od = od_p + (w == 1 ? 0 : expect(w - 1, kOdRun, w - 1, kOdRun));
          } else {
            int k = (m >= 1 && m <= D) ? m : D;
            int m1 = k - 1 >= 1 ? k - 1 : kOdRun;
            od = od_p + (m1 == kOdLaunch ? od_launch : expect(w, m1, w, m1));
          }
          // Ties go to on-demand: equal cost, the job finishes sooner.
          if (od <= best * (1 + 1e-12)) best = od, choice = 1;
          if (is_up) {
            double sp;
            if (m >= kSpotR) {
              int u = m - kSpotR + 1;
              if (u == C) u = 0;
              sp = p + (w == 1 ? 0 : expect(w - 1, kSpotR + u, w - 1 + u, 0));
            } else {
              int k = (m >= kSpotC && m < kSpotR) ? m - kSpotC + 1 : D;
              int m1 = k - 1 >= 1 ? kSpotC + k - 2 : kSpotR;
              sp = p + (m1 == kSpotLaunch ? sp_launch : expect(w, m1, w, 0));
            }
            if (sp < best) best = sp, choice = 2;
          }
          // Past saving: the deadline is lost whatever is chosen; on-demand finishes first.
          if (best >= kInf / 2) choice = 1;
          cur[at] = std::min(best, kInf);
          if (last[at] != choice) {
            last[at] = static_cast<std::uint8_t>(choice);
            changes.push_back({static_cast<std::uint32_t>(at), static_cast<std::uint16_t>(tau),
                               static_cast<std::uint8_t>(choice)});
          }
        }
      }
    }
    if (tau % G == 0) {
      float* row_v = &idle_values_[static_cast<size_t>(tau / G) * value_cols_ * S];
      for (int c = 0; c < value_cols_; ++c) {
        const int w = std::min(W, c * G);
        for (int st = 0; st < S; ++st) {
          double v = cur[static_cast<size_t>(w) * cell + st];  // mode 0: idle
          row_v[static_cast<size_t>(c) * S + st] =
              v >= kInf / 2 ? std::numeric_limits<float>::infinity() : static_cast<float>(v);
        }
      }
    }
    std::swap(prev, cur);
  }
  start_values_.assign(prev.begin() + static_cast<size_t>(W) * cell,
                       prev.begin() + static_cast<size_t>(W) * cell + S);
  // Compress: the changes are in tau order; group them by cell (a stable counting sort).
  offsets_.assign(row + 1, 0);
  for (const auto& c : changes) ++offsets_[c.cell + 1];
  for (size_t c = 0; c < row; ++c) offsets_[c + 1] += offsets_[c];
  run_tau_.resize(changes.size());
  run_act_.resize(changes.size());
  std::vector<std::uint32_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (const auto& c : changes) {
    std::uint32_t i = fill[c.cell]++;
    run_tau_[i] = c.tau;
    run_act_[i] = c.act;
  }
}

int SpotPolicy::Mode(const SpotJobState& s) const {
  const int D = shape_.changeover;
  switch (s.where) {
    case JobWhere::kIdle:
      return 0;
    case JobWhere::kOnDemand:
      return s.changeover_left > 0 ? std::min(s.changeover_left, D) : D + 1;
    case JobWhere::kSpot:
      if (s.changeover_left > 0) return D + 2 + std::min(s.changeover_left, D) - 1;
      return 2 * D + 2 + std::clamp(s.unsaved, 0, shape_.checkpoint - 1);
  }
  return 0;
}

SpotAction SpotPolicy::Action(const SpotJobState& s) const {
  if (s.work_left <= 0) return SpotAction::kWait;
  if (!Covers(s) || s.chain_state < 0 || s.chain_state >= S_) return SpotAction::kOnDemand;
  const int tau = std::clamp(s.time_left, 1, shape_.max_time);
  const size_t c = (static_cast<size_t>(s.work_left) * M_ + Mode(s)) * S_ + s.chain_state;
  const std::uint32_t lo = offsets_[c], hi = offsets_[c + 1];
  if (lo == hi) return SpotAction::kOnDemand;
  // The last run starting at or below tau.
  auto first = run_tau_.begin() + lo, end = run_tau_.begin() + hi;
  auto it = std::upper_bound(first, end, static_cast<std::uint16_t>(tau));
  if (it == first) return SpotAction::kOnDemand;
  return static_cast<SpotAction>(run_act_[(it - run_tau_.begin()) - 1]);
}

double SpotPolicy::IdleValue(const SpotJobState& s) const {
  if (s.work_left <= 0) return 0;
  if (!Covers(s) || s.chain_state < 0 || s.chain_state >= S_) return kInf;
  const int r = std::clamp(s.time_left, 0, shape_.max_time) / kValueGrid;
  const int c = (s.work_left + kValueGrid - 1) / kValueGrid;
  if (c >= value_cols_) return kInf;
  auto at = [&](int col) {
    float v = idle_values_[(static_cast<size_t>(r) * value_cols_ + col) * S_ + s.chain_state];
    return std::isinf(v) ? kInf : static_cast<double>(v);
  };
  const double hi = at(c);
  const int w_hi = std::min(shape_.max_work, c * kValueGrid), w_lo = (c - 1) * kValueGrid;
  if (c == 0 || hi >= kInf / 2 || w_hi <= w_lo || s.work_left >= w_hi) return hi;
  const double lo = at(c - 1);
  if (lo >= kInf / 2) return hi;
  return lo + (hi - lo) * (s.work_left - w_lo) / static_cast<double>(w_hi - w_lo);
}

size_t SpotPolicy::bytes() const {
  return offsets_.size() * sizeof(std::uint32_t) + run_tau_.size() * sizeof(std::uint16_t) +
         run_act_.size() + start_values_.size() * sizeof(double) +
         idle_values_.size() * sizeof(float) + sizeof(*this);
}

SpotForecast Forecast(const SpotPolicy& policy,
                      const std::vector<std::vector<model::AvailabilityModel::Next>>& next,
                      const std::vector<std::uint8_t>& up, SpotJobState start, int samples,
                      std::uint64_t seed) {
  SpotForecast f;
  if (samples <= 0) return f;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> uni(0.0, 1.0);
  const SpotDpShape& sh = policy.shape();
  double sum = 0, sum2 = 0, spot_ticks = 0, od_ticks = 0;
  for (int n = 0; n < samples; ++n) {
    SpotJobState s = start;
    double cost = 0;
    int reclaims = 0;
    bool missed = false;
    int saved_work = s.work_left + s.unsaved;  // work left at the latest checkpoint
    int run_in_attempt = 0;
    // Steps the engine's way (bench/sim/single_job_sim.cc); past the deadline, on-demand to the end.
    for (int guard = 0; s.work_left > 0 && guard < 1000000; ++guard) {
      const bool is_up = up[s.chain_state];
      if (s.where == JobWhere::kSpot && !is_up) {
        s.work_left = saved_work;
        s.unsaved = 0;
        s.where = JobWhere::kIdle;
        ++reclaims;
      }
      SpotAction a;
      if (s.time_left <= 0) {
        missed = true;
        a = s.where == JobWhere::kIdle ? SpotAction::kOnDemand
                                       : (s.where == JobWhere::kSpot ? SpotAction::kSpot
                                                                     : SpotAction::kOnDemand);
      } else {
        a = policy.Action(s);
      }
      if (a == SpotAction::kSpot && !is_up) a = SpotAction::kWait;
      JobWhere target = a == SpotAction::kWait       ? JobWhere::kIdle
                        : a == SpotAction::kOnDemand ? JobWhere::kOnDemand
                                                     : JobWhere::kSpot;
      if (target != s.where) {
        if (s.where != JobWhere::kIdle && s.changeover_left == 0) {
          saved_work = s.work_left;  // a stop order checkpoints
          s.unsaved = 0;
        }
        s.where = target;
        if (target != JobWhere::kIdle) {
          s.changeover_left = sh.changeover;
          run_in_attempt = 0;
        }
      }
      if (s.where != JobWhere::kIdle) {
        const bool spot = s.where == JobWhere::kSpot;
        cost += spot ? sh.spot_price : sh.od_price;
        (spot ? spot_ticks : od_ticks) += 1;
        if (s.changeover_left > 0) {
          --s.changeover_left;
        } else {
          --s.work_left;
          ++s.unsaved;
          if (++run_in_attempt % sh.checkpoint == 0 || s.where == JobWhere::kOnDemand) {
            saved_work = s.work_left;
            s.unsaved = 0;
          }
        }
      }
      --s.time_left;
      // The chain moves on.
      double r = uni(rng), acc = 0;
      int to = s.chain_state;
      for (const auto& nx : next[s.chain_state]) {
        acc += nx.p;
        if (r < acc) {
          to = nx.state;
          break;
        }
      }
      s.chain_state = to;
    }
    if (s.time_left < 0) missed = true;
    sum += cost;
    sum2 += cost * cost;
    f.reclaims += reclaims;
    f.miss_risk += missed ? 1 : 0;
  }
  const double k = samples;
  f.mean_cost = sum / k;
  f.sd_cost = std::sqrt(std::max(0.0, sum2 / k - f.mean_cost * f.mean_cost));
  f.reclaims /= k;
  f.miss_risk /= k;
  const double billed = spot_ticks + od_ticks;
  f.spot_share = billed > 0 ? spot_ticks / billed : 0;
  return f;
}

}  // namespace frugal::policy
