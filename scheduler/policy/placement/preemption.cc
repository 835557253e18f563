#include "scheduler/policy/placement/preemption.h"

#include <algorithm>
#include <tuple>

#include "scheduler/policy/placement/explain.h"

namespace frugal::policy {

Preemptor::Preemptor(const model::Snapshot& s, const PolicyConfig& config, FreeRoom& cap,
                     const std::vector<model::Stop>& stopped)
    : snapshot_(s), config_(config), capacity_(cap), budget_(config.max_preemptions_per_cycle) {
  for (const auto& st : stopped) stopped_.insert(st.attempt_id);
  std::map<model::JobId, int> by_job;
  for (int i = 0; i < static_cast<int>(s.running.size()); ++i) {
    const auto& r = s.running[i];
    auto [it, fresh] = by_job.try_emplace(r.job_id, static_cast<int>(victims_.size()));
    if (fresh) {
      Victim v;
      v.job_id = r.job_id;
      v.rank = r.priority_rank;
      victims_.push_back(std::move(v));
    }
    Victim& v = victims_[it->second];
    v.attempts.push_back(i);
    v.rank = std::min(v.rank, r.priority_rank);
    // A gang is preemptable only as a whole, and only if every part of it is.
    const bool held = Stopping(r) || WhyNotPreemptable(r, s.now, config);
    if (held) v.eligible = false;
    // What protection alone holds back: preemptable once its window has ended.
    const Timestamp until = ProtectedUntil(r, config);
    if (!Stopping(r) && until > s.now && !WhyNotPreemptable(r, until, config)) {
      v.eligible_at = std::max(v.eligible_at.value_or(until), until);
      v.protection = std::max(v.protection, r.min_run_time.value_or(config.min_run_time));
    } else if (held) {
      v.never = true;  // stopping, or held for a reason time does not end
    }
    if (Stopping(r)) soon_free_[r.node_id] += std::max(0, r.gpus);
    VictimCost c = CostToPreempt(r, s.now, config);
    v.cost.lost_gpu_hours += c.lost_gpu_hours;
    v.cost.restart_gpu_hours += c.restart_gpu_hours;
  }
  victim_nodes_.assign(cap.size(), {});
  stopping_nodes_.assign(cap.size(), {});
  std::set<model::NodeId> stopping_seen;
  for (int vi = 0; vi < static_cast<int>(victims_.size()); ++vi) {
    for (int ai : victims_[vi].attempts) {
      const auto& r = s.running[ai];
      int e = cap.EntryOfNode(r.node_id);
      if (e < 0) continue;
      if (Stopping(r) && stopping_seen.insert(r.node_id).second)
        stopping_nodes_[e].push_back(r.node_id);
      if (!victims_[vi].eligible) {
        if (victims_[vi].eligible_at && !victims_[vi].never)
          later_on_node_[r.node_id].push_back({vi, r.gpus});
        continue;
      }
      auto& list = on_node_[r.node_id];
      if (list.empty()) victim_nodes_[e].push_back(r.node_id);
      list.push_back({vi, r.gpus});
    }
  }
  for (auto& [node, list] : on_node_) {
    std::sort(list.begin(), list.end(), [&](const OnNode& a, const OnNode& b) {
      const Victim &va = victims_[a.victim], &vb = victims_[b.victim];
      return std::make_tuple(va.cost.Total(), -va.rank, va.job_id) <
             std::make_tuple(vb.cost.Total(), -vb.rank, vb.job_id);
    });
  }
  for (auto& list : victim_nodes_) std::sort(list.begin(), list.end());
  for (auto& list : stopping_nodes_) std::sort(list.begin(), list.end());
}

bool Preemptor::TryStopping(const ReadyJobs& opts, int j, const std::vector<int>& entries,
                            Room& room) {
  int gpus = opts.view(j).work.gpus;
  for (int e : entries) {
    for (model::NodeId node : stopping_nodes_[e]) {
      if (capacity_.NodeClosed(node)) continue;
      const model::Node* n = capacity_.NodeById(node);
      if (n->gpus < gpus || capacity_.NodeFree(node) + SoonFree(node) < gpus) continue;
      room.kind = Room::kStopping;
      room.node = node;
      for (const auto& r : snapshot_.running)
        if (r.node_id == node && Stopping(r)) room.stopping.push_back(r.attempt_id);
      capacity_.Close(node);
      return true;
    }
  }
  return false;
}

Preemptor::Room Preemptor::MakeRoom(const ReadyJobs& opts, int j) {
  Room room;
  const JobView& view = opts.view(j);
  int gpus = view.work.gpus;
  int rank = view.job->priority_rank;
  // A multi-node gang never preempts: freeing `nodes` nodes at once would stop many jobs
  // for one, and it waits for capacity instead (decision 0032).
  if (view.work.nodes > 1) return room;
  std::vector<int> entries;
  for (int e = 0; e < capacity_.size(); ++e) {
    if (opts.rate(j, 2 * e) >= 0 && gpus <= capacity_.entry(e).largest_node) entries.push_back(e);
  }
  if (entries.empty()) return room;
  // Failures are remembered by shape: room only shrinks during a Decide, so a shape that
  // found none will not find any later (this bounds the work for a large backlog).
  std::vector<int> shape = {gpus};
  shape.insert(shape.end(), entries.begin(), entries.end());
  if (!no_stopping_.count(shape)) {
    if (TryStopping(opts, j, entries, room)) return room;
    no_stopping_.insert(shape);
  }
  if (budget_ <= 0) return room;
  shape.push_back(rank);
  if (failed_.count(shape)) return room;

  // The node where making room throws away the least: (lost + restore GPU-hours, victims, id).
  struct Best {
    double cost = 0;
    int count = 0;
    model::NodeId node = 0;
    std::vector<int> picked;
  } best;
  bool found = false;
  std::vector<int> picked;
  for (int e : entries) {
    for (model::NodeId node : victim_nodes_[e]) {
      if (capacity_.NodeClosed(node) || capacity_.NodeById(node)->gpus < gpus) continue;
      int need = gpus - capacity_.NodeFree(node) - SoonFree(node);
      if (need <= 0) continue;
      double cost = 0;
      picked.clear();
      for (const OnNode& on : on_node_[node]) {
        const Victim& v = victims_[on.victim];
        if (v.used || v.rank <= rank) continue;
        picked.push_back(on.victim);
        cost += v.cost.Total();
        need -= on.gpus;
        if (need <= 0) break;
      }
      if (need > 0 || static_cast<int>(picked.size()) > budget_) continue;
      auto better = std::make_tuple(cost, static_cast<int>(picked.size()), node) <
                    std::make_tuple(best.cost, best.count, best.node);
      if (!found || better) {
        best = {cost, static_cast<int>(picked.size()), node, picked};
        found = true;
      }
    }
  }
  if (!found) {
    failed_.insert(shape);
    return room;
  }
  room.kind = Room::kPreempting;
  room.node = best.node;
  const model::Node& node = *capacity_.NodeById(best.node);
  for (int vi : best.picked) {
    Victim& v = victims_[vi];
    v.used = true;
    --budget_;
    for (int ai : v.attempts) {
      const auto& r = snapshot_.running[ai];
      room.stops.push_back({r.attempt_id, r.job_id, model::StopKind::kPriorityPreemption,
                            VictimReason(*view.job, gpus, node, v.cost, config_)});
    }
  }
  capacity_.Close(best.node);
  return room;
}

std::optional<Preemptor::Later> Preemptor::WhenRoom(const ReadyJobs& opts, int j) const {
  if (later_on_node_.empty()) return std::nullopt;
  const JobView& view = opts.view(j);
  if (view.work.nodes > 1) return std::nullopt;
  const int gpus = view.work.gpus, rank = view.job->priority_rank;
  // Jobs of one shape get one answer: a large backlog costs one scan per shape.
  std::vector<int> shape = {gpus, rank};
  for (int e = 0; e < capacity_.size(); ++e)
    if (opts.rate(j, 2 * e) >= 0) shape.push_back(e);
  auto [cached, fresh] = when_room_.try_emplace(shape);
  if (!fresh) return cached->second;
  std::optional<Later>& best = cached->second;
  for (const auto& [node, protected_list] : later_on_node_) {
    const int e = capacity_.EntryOfNode(node);
    if (e < 0 || opts.rate(j, 2 * e) < 0 || capacity_.NodeClosed(node) ||
        capacity_.NodeById(node)->gpus < gpus) {
      continue;
    }
    // Victims of lower classes on this node, those free to go now first, then by the end
    // of their protection.
    std::vector<std::pair<Timestamp, const OnNode*>> candidates;
    if (auto now = on_node_.find(node); now != on_node_.end()) {
      for (const OnNode& on : now->second) {
        if (!victims_[on.victim].used && victims_[on.victim].rank > rank)
          candidates.push_back({snapshot_.now, &on});
      }
    }
    for (const OnNode& on : protected_list) {
      if (victims_[on.victim].rank > rank) candidates.push_back({*victims_[on.victim].eligible_at, &on});
    }
    std::sort(candidates.begin(), candidates.end(), [&](const auto& a, const auto& b) {
      return std::make_tuple(a.first, victims_[a.second->victim].job_id) <
             std::make_tuple(b.first, victims_[b.second->victim].job_id);
    });
    int need = gpus - capacity_.NodeFree(node) - SoonFree(node);
    Later later;
    for (const auto& [at, on] : candidates) {
      if (need <= 0) break;
      need -= on->gpus;
      later.at = at;
      const Victim& v = victims_[on->victim];
      if (v.eligible_at) {
        later.jobs.push_back(v.job_id);
        later.protection = std::max(later.protection, v.protection);
      }
    }
    if (need > 0 || later.jobs.empty()) continue;
    if (!best || later.at < best->at) best = later;
  }
  return best;
}

}  // namespace frugal::policy
