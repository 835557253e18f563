#include "bench/sim/optimum.h"

#include <algorithm>
#include <limits>
#include <vector>

namespace frugal::sim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

double OptimumCost(const Market& m, const JobShape& job) {
  const int T = job.deadline, P = job.work, d = std::max(1, job.changeover);
  if (P <= 0) return 0;
  if (P + d > T) return kInf;
  // Instances: 0 = on-demand, 1 + z = zone z. States: instance k running (0..K-1), idle (K).
  const int K = 1 + static_cast<int>(m.zones.size());
  const int S = K + 1, idle = K;
  const double step_cost = m.StepHours() * m.instances;
  // Per instance and step of the window: cost of the step, and whether a launch at t can
  // complete its changeover (the instance stays up for d steps).
  std::vector<std::vector<double>> cost(K, std::vector<double>(T + 1, 0));
  std::vector<std::vector<double>> launch(K, std::vector<double>(T + 1, kInf));
  for (int k = 0; k < K; ++k) {
    int where = k == 0 ? kOnDemand : k - 1;
    std::vector<int> up_run(T + 2, 0);  // consecutive up steps from t
    for (int t = T; t >= 0; --t) {
      bool up = where == kOnDemand || m.Up(where, job.start + t);
      up_run[t] = up ? up_run[t + 1] + 1 : 0;
      cost[k][t] = up ? m.Price(where, job.start + t) * step_cost : kInf;
    }
    for (int t = 0; t + d <= T; ++t) {
      if (up_run[t] < d) continue;
      double c = 0;
      for (int j = t; j < t + d; ++j) c += cost[k][j];
      launch[k][t] = c;
    }
  }
  // Ring of d + 1 time layers: a launch at t lands at t + d. Each operation below is a
  // plain loop over progress (the compiler vectorises them); `any` is the best value at
  // (t, p) in any state, the starting point of going idle or launching.
  const int layers = d + 1;
  const size_t row = static_cast<size_t>(P) + 1;
  std::vector<double> V(static_cast<size_t>(layers) * S * row, kInf);
  auto layer = [&](int t, int s) { return &V[(static_cast<size_t>(t % layers) * S + s) * row]; };
  std::vector<double> any(row, kInf);
  layer(0, idle)[0] = 0;
  double best = kInf;
  for (int t = 0; t < T; ++t) {
    const int lo = std::max(0, P - (T - t)), hi = std::min(t, P - 1);
    if (lo <= hi) {
      std::fill(any.begin() + lo, any.begin() + hi + 1, kInf);
      for (int s = 0; s < S; ++s) {
        const double* cur = layer(t, s);
        for (int p = lo; p <= hi; ++p) any[p] = std::min(any[p], cur[p]);
      }
      double* next_idle = layer(t + 1, idle);
      for (int p = lo; p <= hi; ++p) next_idle[p] = std::min(next_idle[p], any[p]);
      for (int k = 0; k < K; ++k) {
        const double c = cost[k][t];
        if (c < kInf) {
          const double* cur = layer(t, k);
          double* next = layer(t + 1, k);
          int top = std::min(hi, P - 2);  // p + 1 == P completes the job instead
          for (int p = lo; p <= top; ++p) next[p + 1] = std::min(next[p + 1], cur[p] + c);
          if (hi == P - 1) best = std::min(best, cur[P - 1] + c);
        }
        const double l = launch[k][t];
        if (l < kInf && t + d < T) {
          double* landed = layer(t + d, k);
          for (int p = lo; p <= hi; ++p) landed[p] = std::min(landed[p], any[p] + l);
        }
      }
    }
    // Layer t is done; it is reused for t + layers. Only cells written for time t can be
    // set: progress from lo(t - d) (launches landing) up to hi(t) + 1.
    int from = std::max(0, P - (T - std::max(0, t - d))), to = std::min(P, hi + 1);
    for (int s = 0; s < S && from <= to; ++s) std::fill(layer(t, s) + from, layer(t, s) + to + 1, kInf);
  }
  return best;
}

}  // namespace frugal::sim
