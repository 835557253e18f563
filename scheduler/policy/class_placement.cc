#include "scheduler/policy/class_placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <cstdio>
#include <set>

#include "scheduler/policy/min_cost_flow.h"

namespace frugal::policy {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Prep {
  int job = 0;
  double unplaced = 0;  // cost per GPU of leaving it unplaced this cycle
  int wait_option = -1;
  int alt_option = -1;
  double eta = 0;
};

// Room per (entry, gang size) at the start of the class: many jobs share a few sizes.
class RoomCache {
 public:
  RoomCache(const Capacity& cap, bool multi) : cap_(cap), multi_(multi) {}
  bool Has(int o, int gpus) { return Room(o, gpus) >= gpus; }
  int Room(int o, int gpus) {
    long long key = (static_cast<long long>(o) << 32) | static_cast<unsigned>(gpus);
    auto [it, fresh] = cache_.try_emplace(key, 0);
    if (fresh) {
      int e = OptionEntry(o);
      it->second = OptionIsNew(o) ? cap_.NewCapacity(e) / gpus * gpus
                                  : cap_.Usable(e, gpus, multi_);
    }
    return it->second;
  }

 private:
  const Capacity& cap_;
  bool multi_;
  std::unordered_map<long long, int> cache_;
};

int Bucket(double rate, double step) {
  return rate <= 0 ? 0 : 1 + static_cast<int>(std::floor(std::log1p(rate) / std::log1p(step)));
}

struct KeyHash {
  size_t operator()(const std::vector<int>& k) const {
    size_t h = 1469598103934665603ull;
    for (int v : k) h = (h ^ static_cast<size_t>(static_cast<unsigned>(v))) * 1099511628211ull;
    return h;
  }
};

struct Group {
  std::vector<int> members;  // indexes into preps, best score first
};

// The wait option: the cheapest option with no room now, if cheaper than the best option
// with room (`best`), and if slack (or patience, without a deadline) outlasts its expected
// wait.
void ConsiderWaiting(const JobOptions& opts, const Capacity& cap, Timestamp now,
                     const PolicyConfig& config, int j, int x, double best, Prep& p) {
  const JobView& v = opts.view(j);
  double eta = cap.entry(OptionEntry(x)).eta_hours;
  if (eta >= kNoLimit) return;  // nothing running there will free it
  Estimate est = opts.EstimateFor(j, x);
  double spare, urgency;
  if (v.deadline.has_deadline) {
    double risk = IsSafe(cap.entry(OptionEntry(x)).pool.kind)
                      ? std::max(0.0, est.wall_hours - v.deadline.safe_hours)
                      : SpotRiskHours(est, v.deadline);
    spare = v.deadline.slack_hours - risk - eta;
    double h = Hours(config.wait_horizon);
    urgency = h > 0 ? std::clamp(1.0 - spare / h, 0.0, 1.0) : 1.0;
  } else {
    double patience = Hours(config.max_wait_without_deadline);
    double waited = HoursBetween(v.job->created_at, now) + eta;
    spare = patience - waited;
    urgency = patience > 0 ? std::clamp(waited / patience, 0.0, 1.0) : 1.0;
  }
  if (spare <= 0 || urgency >= 1) return;
  double rx = opts.rate(j, x);
  p.wait_option = x;
  p.eta = eta;
  // Firmament's unscheduled arc: as cheap as the capacity waited for while slack is ample,
  // rising towards "pay now" as it runs out.
  p.unplaced = rx + (best - rx) * urgency;
}

}  // namespace

void PlaceClass(const std::vector<int>& jobs_in, const JobOptions& opts, Capacity& cap,
                Timestamp now, const PolicyConfig& config, std::vector<JobResult>& results) {
  const int options = opts.options();
  std::vector<int> jobs = jobs_in;
  std::sort(jobs.begin(), jobs.end(), [&](int a, int b) {
    const JobView &va = opts.view(a), &vb = opts.view(b);
    if (va.priority.score != vb.priority.score) return va.priority.score > vb.priority.score;
    return va.job->id < vb.job->id;
  });
  RoomCache room(cap, config.multi_node_gangs);

  // 1. Each job's best option with room now, and its cost of staying unplaced.
  std::vector<Prep> preps;
  for (int j : jobs) {
    int gpus = opts.view(j).work.gpus;
    double best = kInf, cheapest_shut = kInf;
    int best_o = -1, shut_o = -1;
    bool any = false;
    for (int o = 0; o < options; ++o) {
      double r = opts.rate(j, o);
      if (r < 0) continue;
      any = true;
      if (room.Has(o, gpus)) {
        if (r < best) best = r, best_o = o;
      } else if (!OptionIsNew(o) && r < cheapest_shut) {
        cheapest_shut = r, shut_o = o;
      }
    }
    JobResult& res = results[j];
    if (!any) {
      res.outcome = Outcome::kNoOption;
      continue;
    }
    Prep p;
    p.job = j;
    p.alt_option = best_o;
    p.unplaced = kUnplacedPenalty * (1 + opts.view(j).tier);
    if (best_o < 0) {
      // Nothing has room: not a choice to wait, but blocked (and a preemption candidate).
      res.outcome = Outcome::kNoCapacity;
      continue;
    }
    if (shut_o >= 0 && cheapest_shut < best) {
      ConsiderWaiting(opts, cap, now, config, j, shut_o, best, p);
    }
    preps.push_back(p);
  }
  if (preps.empty()) return;

  // 2. Rows of identical jobs; coarser cost buckets until the flow is small enough.
  std::vector<Group> groups;
  std::vector<int> key;
  for (double step : {0.01, 0.05, 0.25, 1.0, 4.0}) {
    groups.clear();
    std::unordered_map<std::vector<int>, int, KeyHash> index;
    for (int i = 0; i < static_cast<int>(preps.size()); ++i) {
      const Prep& p = preps[i];
      int gpus = opts.view(p.job).work.gpus;
      key.clear();
      key.push_back(gpus);
      key.push_back(p.wait_option >= 0 ? -1 - Bucket(p.unplaced, step) : opts.view(p.job).tier);
      for (int o = 0; o < options; ++o) {
        double r = opts.rate(p.job, o);
        key.push_back(r >= 0 && room.Has(o, gpus) ? Bucket(r, step) : -1);
      }
      auto [it, fresh] = index.try_emplace(key, static_cast<int>(groups.size()));
      if (fresh) groups.emplace_back();
      groups[it->second].members.push_back(i);
    }
    {
      std::set<std::pair<int,int>> codes; std::set<std::vector<int>> vecs; int waits = 0;
      for (auto& [k, g] : index) { codes.insert({k[0], k[1]}); vecs.insert(std::vector<int>(k.begin() + 2, k.end())); waits += k[1] < 0; }
      fprintf(stderr, "DBG step=%g groups=%zu codes=%zu vecs=%zu waitgroups=%d\n", step, groups.size(), codes.size(), vecs.size(), waits);
    }
    if (static_cast<int>(groups.size()) <= kMaxFlowRows) break;
  }

  // 3. The flow: rows = groups, bins = options; the top member speaks for its row.
  FlowProblem fp;
  fp.bin_capacity.resize(options);
  for (int o = 0; o < options; ++o) {
    int e = OptionEntry(o);
    fp.bin_capacity[o] = OptionIsNew(o) ? cap.NewCapacity(e) : cap.FreeGpus(e);
  }
  for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
    const Prep& top = preps[groups[g].members.front()];
    int gpus = opts.view(top.job).work.gpus;
    fp.supply.push_back(static_cast<std::int64_t>(groups[g].members.size()) * gpus);
    fp.unplaced_cost.push_back(std::llround(top.unplaced));
    for (int o = 0; o < options; ++o) {
      double r = opts.rate(top.job, o);
      if (r < 0 || !room.Has(o, gpus)) continue;
      fp.arcs.push_back({g, o, room.Room(o, gpus), std::llround(r)});
    }
  }
  FlowSolution sol = SolveMinCostFlow(fp);
  fprintf(stderr, "DBG jobs=%zu preps=%zu groups=%zu arcs=%zu greedy=%d\n", jobs.size(), preps.size(), groups.size(), fp.arcs.size(), (int)sol.used_greedy);

  // 4. Rounding: whole gangs per row and option, cheapest option to the best scores.
  std::vector<std::vector<int>> arcs_of(groups.size());
  for (int a = 0; a < static_cast<int>(fp.arcs.size()); ++a) arcs_of[fp.arcs[a].row].push_back(a);
  std::vector<std::pair<int, int>> picks;  // prep index, option
  std::vector<int> leftovers;
  for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
    auto& arcs = arcs_of[g];
    std::stable_sort(arcs.begin(), arcs.end(),
                     [&](int a, int b) { return fp.arcs[a].cost < fp.arcs[b].cost; });
    const auto& members = groups[g].members;
    int gpus = opts.view(preps[members.front()].job).work.gpus;
    size_t next = 0;
    for (int a : arcs) {
      for (std::int64_t n = sol.flow[a] / gpus; n > 0 && next < members.size(); --n)
        picks.push_back({members[next++], fp.arcs[a].bin});
    }
    while (next < members.size()) leftovers.push_back(members[next++]);
  }

  // 5. Bin packing: big gangs first, each on the fullest node that still fits it.
  std::stable_sort(picks.begin(), picks.end(), [&](const auto& a, const auto& b) {
    int ga = opts.view(preps[a.first].job).work.gpus, gb = opts.view(preps[b.first].job).work.gpus;
    return ga != gb ? ga > gb : a.first < b.first;
  });
  auto try_option = [&](int pi, int o) {
    const Prep& p = preps[pi];
    int gpus = opts.view(p.job).work.gpus;
    int e = OptionEntry(o);
    JobResult& res = results[p.job];
    if (OptionIsNew(o)) {
      if (cap.NewCapacity(e) < gpus) return false;
      cap.UseNew(e, gpus);
      res.outcome = Outcome::kNewNode;
    } else {
      res.slices = cap.Take(e, gpus, config.multi_node_gangs);
      if (res.slices.empty()) return false;
      res.outcome = Outcome::kPlaced;
    }
    res.option = o;
    res.alt_option = p.alt_option;
    return true;
  };
  for (auto [pi, o] : picks) {
    if (!try_option(pi, o)) leftovers.push_back(pi);
  }

  // 6. Repair: what rounding or fragmentation left over, best score first, on any option
  // still cheaper than leaving the job unplaced.
  std::sort(leftovers.begin(), leftovers.end());
  std::vector<int> order;
  for (int pi : leftovers) {
    const Prep& p = preps[pi];
    int gpus = opts.view(p.job).work.gpus;
    order.clear();
    for (int o = 0; o < options; ++o) {
      double r = opts.rate(p.job, o);
      if (r >= 0 && r < p.unplaced) order.push_back(o);
    }
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return opts.rate(p.job, a) < opts.rate(p.job, b); });
    bool done = false;
    for (int o : order) {
      int e = OptionEntry(o);
      if (!OptionIsNew(o) && cap.FreeGpus(e) < gpus) continue;
      if ((done = try_option(pi, o))) break;
    }
    if (done) continue;
    JobResult& res = results[p.job];
    res.outcome = p.wait_option >= 0 ? Outcome::kWaitCheaper : Outcome::kNoCapacity;
    res.option = p.wait_option;
    res.alt_option = p.alt_option;
    res.eta_hours = p.eta;
  }
}

}  // namespace frugal::policy
