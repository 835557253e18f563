#include "scheduler/policy/cost_policy.h"

#include <algorithm>
#include <map>
#include <set>

#include "scheduler/policy/capacity.h"
#include "scheduler/policy/class_placement.h"
#include "scheduler/policy/explain.h"
#include "scheduler/policy/job_options.h"
#include "scheduler/policy/preemption.h"

namespace frugal::policy {

namespace {

// Same rules and words as placement/fifo, so switching policies changes nothing here.
void Dependencies(const model::Snapshot& s, model::Plan& plan) {
  for (const auto& job : s.pending) {
    if (job.failed_dependency) {
      plan.cancels.push_back(
          {job.id,
           "held: dependency " + std::to_string(*job.failed_dependency) + " did not succeed"});
    } else if (!job.waiting_for.empty()) {
      std::string ids;
      for (auto id : job.waiting_for) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      plan.waits.push_back({job.id, "waiting: for dependencies " + ids + " to succeed"});
    }
  }
}

// The deadline guard for running jobs: a checkpointed job on spot must keep enough slack to
// survive one more reclaim (the work since its checkpoint plus a restore) and still finish
// on safe capacity. When it no longer does, and safe capacity has room, move it now.
void Migrations(const model::Snapshot& s, const Capacity& cap, const PolicyConfig& config,
                model::Plan& plan) {
  std::map<model::JobId, std::vector<const model::RunningAttempt*>> jobs;
  for (const auto& r : s.running) jobs[r.job_id].push_back(&r);
  for (const auto& [job_id, parts] : jobs) {
    const model::RunningAttempt& a = *parts.front();
    if (a.tolerance != model::Tolerance::kCheckpointed || !a.deadline) continue;
    int spot_entry = cap.EntryOfNode(a.node_id);
    if (spot_entry < 0 || IsSafe(cap.entry(spot_entry).pool.kind)) continue;
    int gpus = 0;
    bool stopping = false;
    for (const auto* p : parts) gpus += p->gpus, stopping = stopping || p->stopping;
    if (stopping || gpus <= 0) continue;
    Work work = WorkOf(a, config);
    work.gpus = gpus;
    work.resumes = true;  // a move always resumes from the checkpoint
    double safe_hours = kNoLimit, target_hours = kNoLimit;
    int target = -1;
    for (int e = 0; e < cap.size(); ++e) {
      const PoolEntry& pe = cap.entry(e);
      if (!IsSafe(pe.pool.kind) || !PoolFits(a.gpu_types, a.min_gpu_mem_gb, pe.pool)) continue;
      bool room_now = cap.Usable(e, gpus, config.multi_node_gangs) >= gpus;
      if (!cap.CanHost(e, gpus, config.multi_node_gangs)) continue;
      double h = SafeHours(work, pe.pool);
      safe_hours = std::min(safe_hours, h);
      if ((room_now || cap.NewCapacity(e) >= gpus) && h < target_hours)
        target_hours = h, target = e;
    }
    if (target < 0) continue;  // nowhere safe to go: staying on spot is the better bet
    DeadlineView view = ViewDeadline(a.deadline, s.now, safe_hours, config);
    const model::Pool& spot = cap.entry(spot_entry).pool;
    Estimate here = EstimateOn(work, spot, static_cast<int>(parts.size()), false);
    if (view.slack_hours >= here.loss_hours) continue;
    std::string reason =
        MigrationReason(spot, view.slack_hours, here.loss_hours, cap.entry(target).pool);
    for (const auto* p : parts)
      plan.stops.push_back({p->attempt_id, p->job_id, model::StopKind::kMigrateOffSpot, reason});
  }
}

void Releases(const model::Snapshot& s, const Capacity& cap, const std::set<model::PoolId>& growing,
              model::Plan& plan) {
  std::vector<const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->id < b->id; });
  for (const auto* n : nodes) {
    int e = cap.EntryOfNode(n->id);
    if (e < 0 || !n->idle_since || cap.NodeBusy(n->id)) continue;
    const model::Pool& pool = cap.entry(e).pool;
    // Reserved capacity is paid for whether it idles or not: never give it back.
    if (pool.kind == model::CapacityKind::kReserved || pool.idle_timeout.count() <= 0) continue;
    if (growing.count(pool.id)) continue;
    double idle = HoursBetween(*n->idle_since, s.now);
    if (idle < Hours(pool.idle_timeout)) continue;
    plan.node_releases.push_back({n->id, ReleaseReason(idle, pool)});
  }
}

}  // namespace

model::Plan CostPolicy::Decide(const model::Snapshot& s) const {
  model::Plan plan;
  Capacity cap(s, config_);
  Dependencies(s, plan);
  Migrations(s, cap, config_, plan);

  JobOptions opts(s, cap, config_);
  std::vector<JobResult> results(opts.jobs());
  std::map<int, std::vector<int>> classes;
  for (int j = 0; j < opts.jobs(); ++j) classes[opts.view(j).job->priority_rank].push_back(j);

  Preemptor preemptor(s, config_, cap, plan.stops);
  std::map<int, Preemptor::Room> rooms;
  for (auto& [rank, jobs] : classes) {
    PlaceClass(jobs, opts, cap, s.now, config_, results);
    std::vector<int> blocked;
    for (int j : jobs)
      if (results[j].outcome == Outcome::kNoCapacity) blocked.push_back(j);
    std::sort(blocked.begin(), blocked.end(), [&](int a, int b) {
      const JobView &va = opts.view(a), &vb = opts.view(b);
      if (va.priority.score != vb.priority.score) return va.priority.score > vb.priority.score;
      return va.job->id < vb.job->id;
    });
    for (int j : blocked) {
      Preemptor::Room room = preemptor.MakeRoom(opts, j);
      if (room.kind == Preemptor::Room::kNone) continue;
      plan.stops.insert(plan.stops.end(), room.stops.begin(), room.stops.end());
      rooms[j] = std::move(room);
    }
  }

  Explainer why(s, cap, opts, config_);
  std::map<int, std::pair<int, std::vector<model::JobId>>> grow;  // entry -> GPUs, jobs
  for (int j = 0; j < opts.jobs(); ++j) {
    const JobResult& r = results[j];
    model::JobId id = opts.view(j).job->id;
    switch (r.outcome) {
      case Outcome::kPlaced: {
        std::string reason = why.Placed(j, r);
        Micros cost = opts.EstimateFor(j, r.option).cost, left = cost;
        int gpus = opts.view(j).work.gpus;
        for (size_t k = 0; k < r.slices.size(); ++k) {
          // Each part carries its share; the first takes the rounding so the parts add up.
          Micros share = k == 0 ? 0 : cost * r.slices[k].gpus / gpus;
          if (k > 0) left -= share;
          plan.assignments.push_back({id, r.slices[k].node, r.slices[k].gpus, reason, share});
        }
        plan.assignments[plan.assignments.size() - r.slices.size()].expected_cost = left;
        break;
      }
      case Outcome::kNewNode: {
        plan.waits.push_back({id, why.NewNode(j, r)});
        auto& g = grow[OptionEntry(r.option)];
        g.first += opts.view(j).work.gpus;
        g.second.push_back(id);
        break;
      }
      case Outcome::kWaitCheaper:
        plan.waits.push_back({id, why.WaitCheaper(j, r)});
        break;
      case Outcome::kNoCapacity: {
        auto room = rooms.find(j);
        if (room == rooms.end()) {
          plan.waits.push_back({id, why.NoCapacity(j)});
        } else if (room->second.kind == Preemptor::Room::kStopping) {
          plan.waits.push_back({id, why.Stopping(j, room->second)});
        } else {
          plan.waits.push_back({id, why.Preempting(j, room->second)});
        }
        break;
      }
      case Outcome::kNoOption:
      case Outcome::kNone:
        plan.waits.push_back({id, why.NoOption(j)});
        break;
    }
  }

  std::set<model::PoolId> growing;
  for (auto& [e, g] : grow) {
    const model::Pool& pool = cap.entry(e).pool;
    growing.insert(pool.id);
    // GPUs already asked for and still starting count towards these jobs.
    int need = g.first - std::max(0, pool.requested_gpus);
    if (need > 0)
      plan.node_requests.push_back({pool.id, need, RequestReason(g.second, need, pool)});
  }
  Releases(s, cap, growing, plan);
  return plan;
}

std::optional<PriorityFactors> PriorityOf(const model::Snapshot& s, model::JobId job,
                                          const PolicyConfig& config) {
  Capacity cap(s, config);
  JobOptions opts(s, cap, config);
  for (int j = 0; j < opts.jobs(); ++j) {
    if (opts.view(j).job->id == job) return opts.view(j).priority;
  }
  return std::nullopt;
}

}  // namespace frugal::policy
