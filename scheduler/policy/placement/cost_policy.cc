#include "scheduler/policy/placement/cost_policy.h"

#include <algorithm>
#include <map>
#include <set>

#include "scheduler/policy/placement/free_room.h"
#include "scheduler/policy/placement/class_placement.h"
#include "scheduler/policy/placement/explain.h"
#include "scheduler/policy/placement/ready_jobs.h"
#include "scheduler/policy/placement/migration.h"
#include "scheduler/policy/placement/preemption.h"

namespace frugal::policy {

namespace {

// Same rules and words as placement/fifo, so switching policies changes nothing here.
void Dependencies(const model::Snapshot& s, model::Plan& plan) {
  for (const auto& job : s.pending) {
    if (job.failed_dependency) {
      plan.holds.push_back(
          {job.id,
           "held: dependency " + std::to_string(*job.failed_dependency) + " did not succeed"});
    } else if (!job.waiting_for.empty()) {
      std::string ids;
      for (auto id : job.waiting_for) ids += (ids.empty() ? "" : ", ") + std::to_string(id);
      plan.waits.push_back({job.id, "waiting: for dependencies " + ids + " to succeed"});
    }
  }
}

void Releases(const model::Snapshot& s, const FreeRoom& cap, const std::set<model::PoolId>& growing,
              model::Plan& plan) {
  std::vector<const model::Node*> nodes;
  for (const auto& n : s.nodes) nodes.push_back(&n);
  std::sort(nodes.begin(), nodes.end(), [](auto* a, auto* b) { return a->id < b->id; });
  for (const auto* n : nodes) {
    int e = cap.EntryOfNode(n->id);
    if (e < 0 || !n->idle_since || cap.NodeBusy(n->id)) continue;
    const model::Pool& pool = cap.entry(e).pool;
    if (!ReleasedWhenIdle(pool)) continue;  // reserved is paid for whether it idles or not
    // A growing pool keeps its idle nodes for the jobs it grows for, unless they declined
    // them: a node sized to each of those jobs keeps fewer GPUs paid and idle.
    if (growing.count(pool.id) && !cap.NodeDeclined(n->id)) continue;
    double idle = HoursBetween(*n->idle_since, s.now);
    if (idle < Hours(pool.idle_timeout)) continue;
    plan.node_releases.push_back({n->id, ReleaseReason(idle, pool)});
  }
}

}  // namespace

model::Plan CostPolicy::Decide(const model::Snapshot& s) const {
  model::Plan plan;
  FreeRoom cap(s, config_);
  Dependencies(s, plan);
  MigrateOffSpot(s, cap, config_, plan, book_.get());

  ReadyJobs opts(s, cap, config_, book_.get());
  std::vector<JobResult> results(opts.jobs());
  std::map<int, std::vector<int>> classes;
  for (int j = 0; j < opts.jobs(); ++j) classes[opts.view(j).job->priority_rank].push_back(j);

  Preemptor preemptor(s, config_, cap, plan.stops);
  std::map<int, Preemptor::Room> rooms;
  for (auto& [rank, jobs] : classes) {
    PlaceClass(jobs, opts, cap, s.now, config_, results);
    std::vector<int> blocked;
    for (int j : jobs)
      if (results[j].outcome == PlacementOutcome::kNoCapacity) blocked.push_back(j);
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
      case PlacementOutcome::kPlaced: {
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
      case PlacementOutcome::kNewNode: {
        plan.waits.push_back({id, why.NewNode(j, r)});
        auto& g = grow[OptionEntry(r.option)];
        g.first += r.new_gpus;
        g.second.push_back(id);
        break;
      }
      case PlacementOutcome::kWaitCheaper:
        plan.waits.push_back({id, why.WaitCheaper(j, r)});
        break;
      case PlacementOutcome::kNoCapacity: {
        auto room = rooms.find(j);
        if (room == rooms.end()) {
          std::string reason = why.NoCapacity(j);
          if (auto later = preemptor.WhenRoom(opts, j)) reason += "; " + why.PreemptLater(j, *later);
          plan.waits.push_back({id, reason});
        } else if (room->second.kind == Preemptor::Room::kStopping) {
          plan.waits.push_back({id, why.Stopping(j, room->second)});
        } else {
          plan.waits.push_back({id, why.Preempting(j, room->second)});
        }
        break;
      }
      case PlacementOutcome::kNoOption:
      case PlacementOutcome::kNone:
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
      plan.node_requests.push_back(
          {pool.id, need, RequestReason(g.second, need, pool), g.second});
  }
  // After placement, so a move back to spot only takes room no pending job wanted.
  MigrateToSpot(s, cap, config_, plan, book_.get());
  Releases(s, cap, growing, plan);
  return plan;
}

std::optional<PriorityFactors> PriorityOf(const model::Snapshot& s, model::JobId job,
                                          const PolicyConfig& config) {
  FreeRoom cap(s, config);
  ReadyJobs opts(s, cap, config);
  for (int j = 0; j < opts.jobs(); ++j) {
    if (opts.view(j).job->id == job) return opts.view(j).priority;
  }
  return std::nullopt;
}

}  // namespace frugal::policy
