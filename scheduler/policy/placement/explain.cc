#include "scheduler/policy/placement/explain.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

namespace frugal::policy {

std::string Dollars(Micros m) {
  std::string s = "$";  // not "$" + ...: GCC 12 warns falsely (-Wrestrict) on that form
  s += FormatDollars(m);
  return s;
}

std::string RoughHours(double hours) {
  if (!std::isfinite(hours) || hours >= kNoLimit / 2) return "unbounded";
  double s = hours * 3600;
  double unit = std::fabs(hours) < 10 ? 60 : std::fabs(hours) < 240 ? 3600 : 86400;
  long long rounded = std::llround(s / unit) * static_cast<long long>(unit);
  if (rounded == 0) return "0m";
  return FormatDuration(Seconds(rounded));
}

std::string KindName(model::CapacityKind kind) {
  switch (kind) {
    case model::CapacityKind::kReserved:
      return "reserved";
    case model::CapacityKind::kOnDemand:
      return "on-demand";
    case model::CapacityKind::kSpot:
      return "spot";
  }
  return "unknown";
}

namespace {

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", x);
  return buf;
}

std::string Gpus(int n) { return std::to_string(n) + " GPU(s)"; }

}  // namespace

Explainer::Explainer(const model::Snapshot& s, const FreeRoom& cap, const ReadyJobs& opts,
                     const PolicyConfig& config)
    : snapshot_(s), capacity_(cap), options_(opts), config_(config) {}

std::string Explainer::PoolLabel(int o) const {
  const model::Pool& p = capacity_.entry(OptionEntry(o)).pool;
  return KindName(p.kind) + " " + p.name;
}

Micros Explainer::Marginal(int o, const Estimate& e) const {
  return capacity_.entry(OptionEntry(o)).pool.kind == model::CapacityKind::kReserved ? 0 : e.cost;
}

int Explainer::OnDemandOption(int j) const {
  int best = -1;
  Micros best_cost = 0;
  for (int o = 0; o < options_.options(); ++o) {
    if (options_.rate(j, o) < 0) continue;
    if (capacity_.entry(OptionEntry(o)).pool.kind != model::CapacityKind::kOnDemand) continue;
    Micros c = options_.EstimateFor(j, o).cost;
    if (best < 0 || c < best_cost) best = o, best_cost = c;
  }
  return best;
}

std::string Explainer::WhyNotCheaper(int j, int chosen) const {
  const JobView& v = options_.view(j);
  double chosen_rate = options_.rate(j, chosen);
  std::string out;
  std::set<model::CapacityKind> told;
  for (int e = 0; e < capacity_.size(); ++e) {
    const model::Pool& p = capacity_.entry(e).pool;
    if (!IsSafe(p.kind) && told.count(p.kind) == 0 &&
        PoolFits(v.job->gpu_types, v.job->min_gpu_mem_gb, p)) {
      std::string note;
      double r = options_.rate(j, 2 * e);
      if (v.job->tolerance == model::Tolerance::kNone) {
        note = "tolerance none never runs on spot";
      } else if (r < 0 && v.deadline.has_deadline && capacity_.entry(e).largest_node > 0) {
        Estimate est = options_.EstimateFor(j, 2 * e);
        note = "slack " + RoughHours(v.deadline.slack_hours) + " does not cover the risk of " +
               RoughHours(SpotRiskHours(est, v.deadline)) + " on spot " + p.name;
      } else if (r >= 0 && r < chosen_rate) {
        note = "spot " + p.name + " has no room";
      }
      if (!note.empty()) {
        out += (out.empty() ? "" : "; ") + note;
        told.insert(p.kind);
      }
    }
    if (p.kind == model::CapacityKind::kReserved && told.count(p.kind) == 0) {
      double r = options_.rate(j, 2 * e);
      if (r >= 0 && r < chosen_rate) {
        out += (out.empty() ? "" : "; ") + ("reserved " + p.name + " has no room");
        told.insert(p.kind);
      }
    }
  }
  return out;
}

std::string Explainer::DeadlineNote(int j, int o, const Estimate& e) const {
  const JobView& v = options_.view(j);
  std::string s;
  if (v.late) {
    s += "; deadline cannot be met: finishes in ~" + RoughHours(e.startup_hours + e.wall_hours) +
         " with " + RoughHours(v.deadline.left_hours) + " left";
  } else if (v.deadline.has_deadline && !IsSafe(capacity_.entry(OptionEntry(o)).pool.kind)) {
    s += "; slack " + RoughHours(v.deadline.slack_hours) + " covers the risk of " +
         RoughHours(SpotRiskHours(e, v.deadline));
  }
  if (!v.work.estimated)
    s += " (no estimate: assumed " + RoughHours(Hours(config_.default_estimate)) + ")";
  return s;
}

std::string Explainer::Placed(int j, const JobResult& r) const {
  const JobView& v = options_.view(j);
  Estimate e = options_.EstimateFor(j, r.option);
  const model::Node* first = capacity_.NodeById(r.slices.front().node);
  std::string s = "placement/cost: " + PoolLabel(r.option) + " on " + first->name;
  if (r.slices.size() > 1) s += " +" + std::to_string(r.slices.size() - 1) + " node(s)";
  s += ", " + Gpus(v.work.gpus) + ": ";
  model::CapacityKind kind = capacity_.entry(OptionEntry(r.option)).pool.kind;
  int od = OnDemandOption(j);
  if (kind == model::CapacityKind::kReserved) {
    s += "already paid";
    if (od >= 0) {
      s += " (on-demand " + capacity_.entry(OptionEntry(od)).pool.name + " would cost " +
           Dollars(options_.EstimateFor(j, od).cost) + ")";
    }
    s += ", expected " + RoughHours(e.wall_hours);
  } else {
    s += "expected " + Dollars(e.cost) + " for " + RoughHours(e.wall_hours);
    if (kind == model::CapacityKind::kSpot) {
      if (od >= 0) s += " vs " + Dollars(options_.EstimateFor(j, od).cost) + " on-demand";
      s += "; " + Num(e.preemptions) + " expected preemption(s) add " + RoughHours(e.rework_hours);
      if (!v.deadline.has_deadline) s += "; no deadline";
    } else {
      std::string why = WhyNotCheaper(j, r.option);
      if (!why.empty()) s += "; " + why;
    }
  }
  return s + DeadlineNote(j, r.option, e);
}

std::string Explainer::NewNode(int j, const JobResult& r) const {
  Estimate e = options_.EstimateFor(j, r.option);
  const model::Pool& p = capacity_.entry(OptionEntry(r.option)).pool;
  std::string s = "waiting for a new node in " + PoolLabel(r.option) + " (requested, ready in ~" +
                  RoughHours(Hours(p.startup_delay)) + "): expected " + Dollars(e.cost) + " for " +
                  RoughHours(e.wall_hours);
  if (r.held_parts > 0)
    s += "; holding " + std::to_string(r.held_parts) + " live node(s) for its other parts";
  if (p.kind == model::CapacityKind::kOnDemand) {
    std::string why = WhyNotCheaper(j, r.option);
    if (!why.empty()) s += "; " + why;
  }
  return s + DeadlineNote(j, r.option, e);
}

std::string Explainer::WaitCheaper(int j, const JobResult& r) const {
  const JobView& v = options_.view(j);
  Estimate x = options_.EstimateFor(j, r.option);
  std::string s = "waiting for " + PoolLabel(r.option) +
                  (capacity_.entry(OptionEntry(r.option)).returns
                       ? std::string(" to come back (it has no node now") +
                             (r.eta_hours > 0 ? "; its outages last ~" + RoughHours(r.eta_hours) +
                                                    " on average): "
                                              : std::string("): "))
                       : " (room expected in ~" + RoughHours(r.eta_hours) + "): ");
  bool spot = !IsSafe(capacity_.entry(OptionEntry(r.option)).pool.kind);
  if (v.deadline.has_deadline) {
    s += "slack " + RoughHours(v.deadline.slack_hours) + " covers ";
    s += spot ? Num(x.preemptions) + " expected preemption(s)" : "the wait";
  } else {
    s += "no deadline; waits at most " + RoughHours(Hours(config_.max_wait_without_deadline)) +
         " for cheaper capacity";
  }
  if (r.alt_option >= 0) {
    Estimate alt = options_.EstimateFor(j, r.alt_option);
    Micros more = Marginal(r.alt_option, alt) - Marginal(r.option, x);
    s += "; " + PoolLabel(r.alt_option) + " now would cost " + Dollars(more) + " more";
  } else {
    s += "; nothing else it may use has room";
  }
  return s;
}

std::string Explainer::NoCapacity(int j) const {
  const JobView& v = options_.view(j);
  std::vector<int> entries;
  for (int e = 0; e < capacity_.size(); ++e) {
    if (options_.rate(j, 2 * e) >= 0 || options_.rate(j, 2 * e + 1) >= 0) entries.push_back(e);
  }
  auto [it, fresh] = pool_lists_.try_emplace(entries);
  if (fresh) {
    std::string& list = it->second;
    for (size_t i = 0; i < entries.size() && i < 3; ++i)
      list += (i ? ", " : "") + capacity_.entry(entries[i]).pool.name;
    if (entries.size() > 3) list += " +" + std::to_string(entries.size() - 3) + " more";
  }
  return "waiting: no room for " + Gpus(v.work.gpus) + " in the pool(s) it may use (" + it->second +
         ")";
}

std::string Explainer::NoOption(int j) const {
  const JobView& v = options_.view(j);
  const model::PendingJob& job = *v.job;
  const bool multi = config_.spread_large_jobs;
  bool elastic = false, safe_fits = false, holds = false;
  for (int e = 0; e < capacity_.size(); ++e) {
    const PoolEntry& pe = capacity_.entry(e);
    const model::Pool& p = pe.pool;
    bool grows = p.elastic && !pe.derived;
    elastic = elastic || grows;
    if (!PoolFits(job.gpu_types, job.min_gpu_mem_gb, p)) continue;
    safe_fits = safe_fits || IsSafe(p.kind);
    if (job.nodes > 1) {
      holds = holds || capacity_.CanHost(e, job.gpus, multi, job.nodes) ||
              capacity_.MayReturnFor(e, job.gpus, multi, job.nodes);
      continue;
    }
    holds =
        holds || pe.largest_node >= job.gpus || (multi && pe.largest_node > 0) ||
        (grows && p.max_gpus >= job.gpus && (p.node_gpus <= 0 || p.node_gpus >= job.gpus || multi));
  }
  if (snapshot_.nodes.empty() && !elastic) return "waiting: no live nodes are registered";
  if (!v.any_type_fits) {
    std::string want = job.gpu_types.empty() ? "any type" : "";
    for (size_t i = 0; i < job.gpu_types.size(); ++i) want += (i ? "/" : "") + job.gpu_types[i];
    if (job.min_gpu_mem_gb) want += " with >= " + std::to_string(*job.min_gpu_mem_gb) + " GB";
    return "waiting: no pool has GPUs of an allowed type (" + want + ")";
  }
  if (!safe_fits && job.tolerance == model::Tolerance::kNone)
    return "waiting: only spot pools have an allowed GPU type, and tolerance none never runs on "
           "spot";
  if (!holds) {
    if (job.nodes > 1)
      return "waiting: no pool of an allowed type can hold the gang: it needs " +
             std::to_string(job.nodes) + " nodes with " + Gpus(job.gpus / job.nodes) +
             " each, at once";
    return "waiting: no pool of an allowed type can hold " + Gpus(job.gpus) +
           (multi ? " at once" : " on one node");
  }
  return "waiting: no pool of an allowed type can run it now";
}

std::string Explainer::Stopping(int j, const Preemptor::Room& room) const {
  std::string ids;
  for (auto id : room.stopping) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  return "waiting: " + Gpus(options_.view(j).work.gpus) + " on " +
         capacity_.NodeById(room.node)->name + " free up as attempt(s) " + ids + " stop";
}

std::string Explainer::Preempting(int j, const Preemptor::Room& room) const {
  std::set<model::JobId> jobs;
  for (const auto& st : room.stops) jobs.insert(st.job_id);
  std::string ids;
  for (auto id : jobs) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  const JobView& v = options_.view(j);
  return "waiting: preempting job(s) " + ids + " on " + capacity_.NodeById(room.node)->name +
         " to make room for " + Gpus(v.work.gpus) + " (class " +
         ClassName(v.job->priority_rank, config_) + "): the least work lost";
}

std::string Explainer::PreemptLater(int j, const Preemptor::Later& later) const {
  std::string ids;
  for (size_t i = 0; i < later.jobs.size(); ++i) ids += (i ? ", " : "") + std::to_string(later.jobs[i]);
  const std::time_t t = std::chrono::system_clock::to_time_t(later.at);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char at[32];
  std::strftime(at, sizeof at, "%H:%M UTC", &tm);
  const bool one = later.jobs.size() == 1;
  return "job " + std::to_string(options_.view(j).job->id) + " can preempt job" +
         (one ? " " : "s ") + ids + " at " + at + ", when " + (one ? "its " : "their ") +
         std::to_string(std::chrono::duration_cast<std::chrono::minutes>(later.protection).count()) +
         "-minute protection ends";
}

std::string VictimReason(const model::PendingJob& preemptor, int gpus, const model::Node& node,
                         const VictimCost& cost, const PolicyConfig& config) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.2f GPU-h since its last checkpoint, %.2f GPU-h to restore",
                cost.lost_gpu_hours, cost.restart_gpu_hours);
  return "preempted by priority: job " + std::to_string(preemptor.id) + " (" +
         ClassName(preemptor.priority_rank, config) + ") needs " + Gpus(gpus) + " on " + node.name +
         "; this job loses the least there (" + buf + ")";
}

std::string MigrationReason(const model::Pool& spot, double slack_hours, double loss_hours,
                            const model::Pool& safe) {
  return "moving off spot " + spot.name + " before the deadline: slack " + RoughHours(slack_hours) +
         " no longer covers a reclaim (up to " + RoughHours(loss_hours) +
         " lost); checkpoint and resume on " + KindName(safe.kind) + " " + safe.name;
}

std::string LearnedMoveReason(const model::Pool& spot, const SpotDecision& d,
                              const model::Pool& safe) {
  return "moving off spot " + spot.name + ": the learned availability model (" +
         DescribeSpell(spot, d) + ") makes " + KindName(safe.kind) + " " + safe.name +
         " the cheaper way to the deadline from here; checkpoint and resume there";
}

std::string ReturnReason(const model::Pool& here, const model::Pool& spot,
                         const DeadlineView& view, const Estimate& spot_estimate, Micros saving) {
  std::string s = "moving to spot " + spot.name + " (has room again): expected to save " +
                  Dollars(saving) + " over " + KindName(here.kind) + " " + here.name +
                  " after the changeovers";
  if (view.has_deadline)
    s += "; slack " + RoughHours(view.slack_hours) + " covers a reclaim (up to " +
         RoughHours(spot_estimate.loss_hours) + " lost)";
  return s + "; checkpoint and resume there";
}

std::string RequestReason(const std::vector<model::JobId>& jobs, int gpus,
                          const model::Pool& pool) {
  std::string ids;
  for (size_t i = 0; i < jobs.size() && i < 5; ++i)
    ids += (i ? ", " : "") + std::to_string(jobs[i]);
  if (jobs.size() > 5) ids += " +" + std::to_string(jobs.size() - 5) + " more";
  return Gpus(gpus) + " for job(s) " + ids + ": cheapest placement that meets their needs is " +
         "new capacity in " + KindName(pool.kind) + " " + pool.name + " (ready in ~" +
         RoughHours(Hours(pool.startup_delay)) + ")";
}

std::string ReleaseReason(double idle_hours, const model::Pool& pool) {
  return "idle for " + RoughHours(idle_hours) + ", past the idle timeout of " +
         RoughHours(Hours(pool.idle_timeout)) + " of " + KindName(pool.kind) + " " + pool.name;
}

}  // namespace frugal::policy
