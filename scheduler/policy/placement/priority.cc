#include "scheduler/policy/placement/priority.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

namespace frugal::policy {

double AgeFactor(double waited_hours, Seconds saturation) {
  double sat = Hours(saturation);
  if (sat <= 0) return 1.0;
  return std::clamp(waited_hours / sat, 0.0, 1.0);
}

double DecayedUsage(double gpu_hours, double elapsed_hours, Seconds half_life) {
  double hl = Hours(half_life);
  if (hl <= 0 || elapsed_hours <= 0) return gpu_hours;
  return gpu_hours * std::exp2(-elapsed_hours / hl);
}

double FairShareFactor(double usage_fraction, double share_fraction) {
  if (usage_fraction <= 0) return 1.0;
  if (share_fraction <= 0) return 0.0;
  return std::exp2(-usage_fraction / share_fraction);
}

double UrgencyFactor(const DeadlineView& view, Seconds horizon) {
  if (!view.has_deadline) return 0.0;
  double h = Hours(horizon);
  if (h <= 0) return view.slack_hours <= 0 ? 1.0 : 0.0;
  return std::clamp(1.0 - view.slack_hours / h, 0.0, 1.0);
}

double SizeFactor(int gpus, int largest_gpus) {
  if (largest_gpus <= 1) return 0.0;
  return std::clamp(std::log2(1.0 + gpus) / std::log2(1.0 + largest_gpus), 0.0, 1.0);
}

double WeightedScore(const PriorityFactors& f, const FactorWeights& w) {
  double total = std::max(0.0, w.age) + std::max(0.0, w.fair_share) + std::max(0.0, w.urgency) +
                 std::max(0.0, w.size);
  if (total <= 0) return 0.0;
  return (std::max(0.0, w.age) * f.age + std::max(0.0, w.fair_share) * f.fair_share +
          std::max(0.0, w.urgency) * f.urgency + std::max(0.0, w.size) * f.size) /
         total;
}

std::string ExplainPriority(const PriorityFactors& f, const FactorWeights& w) {
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "score %.2f = (age %.2fx%g + fair_share %.2fx%g + urgency %.2fx%g + size "
                "%.2fx%g) / %g",
                f.score, f.age, w.age, f.fair_share, w.fair_share, f.urgency, w.urgency, f.size,
                w.size, w.age + w.fair_share + w.urgency + w.size);
  return buf;
}

FairShare::FairShare(const model::Snapshot& s, const PolicyConfig& config) {
  std::set<model::TeamId> teams;
  for (const auto& [t, u] : s.team_usage) teams.insert(t);
  for (const auto& [t, w] : s.team_shares) teams.insert(t);
  for (const auto& j : s.pending) teams.insert(j.team_id);
  std::map<model::TeamId, double> usage, share;
  double total_usage = 0, total_share = 0;
  for (auto t : teams) {
    auto u = s.team_usage.find(t);
    double used = 0;
    if (u != s.team_usage.end() && std::isfinite(u->second.gpu_hours)) {
      used = std::max(0.0, DecayedUsage(u->second.gpu_hours, HoursBetween(u->second.as_of, s.now),
                                        config.fair_share_half_life));
    }
    auto w = s.team_shares.find(t);
    double sh = w == s.team_shares.end() ? 1.0 : std::max(0.0, w->second);
    if (!std::isfinite(sh)) sh = 1.0;
    usage[t] = used;
    share[t] = sh;
    total_usage += used;
    total_share += sh;
  }
  for (auto t : teams) {
    double uf = total_usage > 0 ? usage[t] / total_usage : 0.0;
    double sf = total_share > 0 ? share[t] / total_share : 0.0;
    factor_[t] = FairShareFactor(uf, sf);
  }
}

double FairShare::Factor(model::TeamId team) const {
  auto it = factor_.find(team);
  return it == factor_.end() ? 1.0 : it->second;
}

PriorityFactors FactorsFor(const model::PendingJob& job, const DeadlineView& deadline,
                           const FairShare& fair_share, int largest_gpus, Timestamp now,
                           const PolicyConfig& config) {
  PriorityFactors f;
  f.age = AgeFactor(HoursBetween(job.created_at, now), config.age_saturation);
  f.fair_share = fair_share.Factor(job.team_id);
  f.urgency = UrgencyFactor(deadline, config.urgency_horizon);
  f.size = SizeFactor(job.gpus, largest_gpus);
  f.score = WeightedScore(f, config.weights);
  return f;
}

Timestamp ProtectedUntil(const model::RunningAttempt& a, const PolicyConfig& config) {
  return a.started_at + a.min_run_time.value_or(config.min_run_time);
}

std::optional<std::string> WhyNotPreemptable(const model::RunningAttempt& a, Timestamp now,
                                             const PolicyConfig& config) {
  if (a.stopping) return "already stopping";
  if (a.tolerance == model::Tolerance::kNone) return "tolerance none: cannot be interrupted";
  if (now < ProtectedUntil(a, config)) return "has not run the minimum run time yet";
  if (a.last_priority_preemption_at &&
      !(a.last_checkpoint_at && *a.last_checkpoint_at > *a.last_priority_preemption_at))
    return "preempted by priority before and no checkpoint since";
  return std::nullopt;
}

VictimCost CostToPreempt(const model::RunningAttempt& a, Timestamp now,
                         const PolicyConfig& config) {
  VictimCost c;
  Timestamp since = a.started_at;
  bool has_checkpoint = a.tolerance == model::Tolerance::kCheckpointed && a.last_checkpoint_at;
  if (has_checkpoint) since = std::max(since, *a.last_checkpoint_at);
  c.lost_gpu_hours = std::max(0.0, HoursBetween(since, now)) * std::max(0, a.gpus);
  if (has_checkpoint) c.restart_gpu_hours = Hours(config.restore_time) * std::max(0, a.gpus);
  return c;
}

std::string ClassName(int rank, const PolicyConfig& config) {
  if (rank >= 0 && rank < static_cast<int>(config.priority_classes.size()))
    return config.priority_classes[rank];
  return "rank " + std::to_string(rank);
}

}  // namespace frugal::policy
