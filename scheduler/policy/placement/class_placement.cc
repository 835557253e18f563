#include "scheduler/policy/placement/class_placement.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "scheduler/policy/placement/min_cost_flow.h"

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

// Room per (option, gang size) at the start of the class: many jobs share a few sizes, so
// a flat table for the usual sizes and a map for the rest.
class RoomCache {
 public:
  RoomCache(const FreeRoom& cap, int options, bool multi)
      : cap_(cap), multi_(multi), small_(static_cast<size_t>(options) * kSmall, -1) {}
  bool Has(int o, const Work& w) { return Room(o, w) >= w.gpus; }
  int Room(int o, const Work& w) {
    const int gpus = w.gpus, nodes = w.nodes;
    int* slot;
    if (gpus < kSmall && nodes <= 1) {
      slot = &small_[static_cast<size_t>(o) * kSmall + gpus];
    } else {
      // A gang's shape in the low word: its GPUs below bit 20, its nodes above.
      const unsigned shape = static_cast<unsigned>(gpus) | static_cast<unsigned>(nodes - 1) << 20;
      slot = &large_.try_emplace((static_cast<long long>(o) << 32) | shape, -1).first->second;
    }
    if (*slot < 0) {
      int e = OptionEntry(o);
      *slot = OptionIsNew(o) ? NewRoom(e, gpus, nodes) : cap_.Usable(e, gpus, multi_, nodes);
    }
    return *slot;
  }

 private:
  // GPUs of whole gangs the pool's growth can host: the first gang of a multi-node shape
  // holds the live nodes that fit a part (FreeRoom::HoldParts) and needs new nodes only
  // for the rest, so a pool capped near one gang's size still has room for it.
  int NewRoom(int e, int gpus, int nodes) const {
    const int all = cap_.NewGpusFor(e, gpus, nodes);
    if (all <= 0) return 0;
    const int grow = cap_.NewCapacity(e);
    const int first = cap_.NewGpusFor(e, gpus, nodes, cap_.PartsFree(e, gpus, nodes));
    if (first >= all) return grow / all * gpus;
    return grow < first ? 0 : (1 + (grow - first) / all) * gpus;
  }

  static constexpr int kSmall = 33;
  const FreeRoom& cap_;
  bool multi_;
  std::vector<int> small_;
  std::unordered_map<long long, int> large_;
};

// Log-scale bucket of a positive quantity: factor `f` per bucket.
int LogBucket(double x, double f) {
  return x <= 0 ? -1 : static_cast<int>(std::floor(std::log(x) / std::log(f)));
}

struct KeyHash {
  size_t operator()(const std::vector<int>& k) const {
    size_t h = 1469598103934665603ull;
    for (int v : k) h = (h ^ static_cast<size_t>(static_cast<unsigned>(v))) * 1099511628211ull;
    return h;
  }
};

// Jobs whose option rates come from the same inputs share a row: same gang size, same
// options with room, and the same cost profile (tolerance, checkpoint interval, and the run
// length where it matters: restart rework on spot, a restore when resuming, lateness).
// Coarser `level`s widen the buckets so that the flow stays small.
// At the last level only the tolerance and lateness remain of the profile.
constexpr int kRowLevels = 5;

void RowKey(const ReadyJobs& opts, RoomCache& room, int j, int level, std::vector<int>& key) {
  static constexpr double kFactor[] = {1.25, 1.5, 2.0, 4.0};
  const JobView& v = opts.view(j);
  const Work& w = v.work;
  key.clear();
  key.push_back(w.gpus);
  key.push_back(w.nodes);
  key.push_back(static_cast<int>(w.tolerance));
  key.push_back(v.late);
  bool fine = level < kRowLevels - 1;
  key.push_back(fine ? LogBucket(w.checkpoint_hours, kFactor[level]) : 0);
  bool run_matters = v.late || w.resumes || w.tolerance == model::Tolerance::kRestartable;
  key.push_back(fine && run_matters ? LogBucket(w.ref_hours, kFactor[level]) : 0);
  int word = 0, bit = 0;
  for (int o = 0; o < opts.options(); ++o) {
    if (opts.rate(j, o) >= 0 && room.Has(o, w)) word |= 1 << bit;
    if (++bit == 31) key.push_back(word), word = 0, bit = 0;
  }
  key.push_back(word);
}

struct Group {
  std::vector<int> members;  // indexes into preps, best score first
};

// Whether sitting out a spot pool's outage of `eta` hours beats running on a safe pool
// through it and coming back, when slack is what limits the job. Leaving keeps eta - 2 x
// restore hours of slack (two changeovers); spot use spends kappa hours of slack per hour
// on it (rework and changeovers per reclaim), so that kept slack buys eta - 2 x restore
// over kappa more hours on spot, worth (safe - spot) each, against eta hours paid at
// (safe - spot) for leaving: waiting wins when eta x (1 - kappa) < 2 x restore.
bool OutageIsCheaperWaited(const Estimate& spot, const Work& work, double eta) {
  // An unknown outage (0: nothing learned, no prior) is not assumed short.
  if (eta <= 0 || spot.run_hours <= 0 || spot.wall_hours <= 0) return false;
  double kappa = spot.rework_hours / spot.run_hours +
                 spot.preemptions / spot.wall_hours * work.restore_hours;
  return eta * (1 - kappa) < 2 * work.restore_hours;
}

// The wait option: the cheapest option with no room now, if cheaper than the best option
// with room (`best_o`, at rate `best`), if slack (or patience, without a deadline)
// outlasts its expected wait, and if what the wait saves outweighs what it may cost.
void ConsiderWaiting(const ReadyJobs& opts, const FreeRoom& cap, Timestamp now,
                     const PolicyConfig& config, int j, int x, int best_o, double best,
                     Prep& p) {
  const JobView& v = opts.view(j);
  const PoolEntry& waited = cap.entry(OptionEntry(x));
  double eta = waited.eta_hours;
  if (eta >= kNoLimit) return;  // nothing running there will free it
  Estimate est = opts.EstimateFor(j, x);
  const bool best_safe = IsSafe(cap.entry(OptionEntry(best_o)).pool.kind);
  double spare, urgency;
  if (v.deadline.has_deadline) {
    double risk, wait = eta;
    if (IsSafe(waited.pool.kind)) {
      risk = std::max(0.0, est.wall_hours - v.deadline.safe_hours);
    } else if (waited.returns && best_safe && OutageIsCheaperWaited(est, v.work, eta)) {
      // Leaving for the safe pool would keep less slack than it costs: only the floor of
      // one reclaim applies, not the reserve for the reclaims of the rest of the run; but
      // the outage must end above that floor, or the pool could not be used when back.
      risk = SpotRiskHours(est, v.deadline);
    } else {
      risk = SpotReserveHours(est, v.deadline, v.work);
      // Above the reserve a returning pool is waited for one cycle at a time: its outage
      // is not set aside in advance (the wait ends when the slack reaches the reserve).
      if (waited.returns) wait = 0;
    }
    spare = v.deadline.slack_hours - risk - wait;
    double h = Hours(config.wait_horizon);
    urgency = h > 0 ? std::clamp(1.0 - spare / h, 0.0, 1.0) : 1.0;
  } else {
    double patience = Hours(config.max_wait_without_deadline);
    // As above the reserve, a returning pool is waited for one cycle at a time.
    double waited_h = HoursBetween(v.job->created_at, now) + (waited.returns ? 0.0 : eta);
    spare = patience - waited_h;
    urgency = patience > 0 ? std::clamp(waited_h / patience, 0.0, 1.0) : 1.0;
  }
  if (spare <= 0 || urgency >= 1) return;
  double rx = opts.rate(j, x);
  if (!best_safe && eta > 0) {
    // Waiting for a cheaper spot pool while another has room: an hour waited is, at
    // worst, an hour that must run on the cheapest safe option instead of the one waited
    // for; wait only if the remaining run saves more than the expected outage may cost.
    double safe = kInf;
    for (int o = 0; o < opts.options(); ++o) {
      double r = opts.rate(j, o);
      if (r >= 0 && IsSafe(cap.entry(OptionEntry(o)).pool.kind)) safe = std::min(safe, r);
    }
    if (safe < kInf && (best - rx) * est.run_hours <= (safe - rx) * eta) return;
  }
  p.wait_option = x;
  p.eta = eta;
  // Firmament's unscheduled arc: as cheap as the capacity waited for while slack is ample,
  // rising towards "pay now" as it runs out.
  p.unplaced = rx + (best - rx) * urgency;
}

// The job waits for new nodes of entry e, if the pool can grow by what it lacks: a gang
// holds the live nodes that fit a part and asks only for the rest (FreeRoom::HoldParts).
bool GrowFor(FreeRoom& cap, int e, const Work& work, JobResult& res) {
  const int held = cap.PartsFree(e, work.gpus, work.nodes);
  const int need = cap.NewGpusFor(e, work.gpus, work.nodes, held);
  if (cap.NewCapacity(e) < need) return false;
  cap.UseNew(e, need);
  cap.HoldParts(e, work.gpus, work.nodes, held);
  res.outcome = PlacementOutcome::kNewNode;
  res.new_gpus = need;
  res.held_parts = held;
  return true;
}

}  // namespace

namespace {

// One class's placement (PlaceClass) in its six steps, which share this state. Single use:
// construct, then Run once.
class ClassPlacer {
 public:
  ClassPlacer(const ReadyJobs& opts, FreeRoom& cap, Timestamp now, const PolicyConfig& config,
              std::vector<JobResult>& results)
      : opts_(opts),
        cap_(cap),
        now_(now),
        config_(config),
        results_(results),
        options_(opts.options()),
        room_(cap, options_, config.spread_large_jobs) {}

  // `jobs` best score first.
  void Run(const std::vector<int>& jobs) {
    Prepare(jobs);
    if (preps_.empty()) return;
    GroupRows();
    Round(SolveFlow());
    Pack();
    Repair();
  }

 private:
  // 1. Each job's best option with room now, and its cost of staying unplaced. Jobs with no
  // option, or none with room, are decided here; so is a gang that takes live nodes for
  // the parts they fit while it waits for the rest.
  void Prepare(const std::vector<int>& jobs) {
    for (int j : jobs) {
      const Work& work = opts_.view(j).work;
      double best = kInf, cheapest_shut = kInf;
      int best_o = -1, shut_o = -1;
      bool any = false;
      for (int o = 0; o < options_; ++o) {
        double r = opts_.rate(j, o);
        if (r < 0) continue;
        any = true;
        if (room_.Has(o, work)) {
          if (r < best) best = r, best_o = o;
        } else if (!OptionIsNew(o) && r < cheapest_shut) {
          cheapest_shut = r, shut_o = o;
        }
      }
      JobResult& res = results_[j];
      if (!any) {
        res.outcome = PlacementOutcome::kNoOption;
        continue;
      }
      Prep p;
      p.job = j;
      p.alt_option = best_o;
      p.unplaced = kUnplacedPenalty * (1 + opts_.view(j).tier);
      if (best_o < 0) {
        // Nothing has room: not a choice to wait, but blocked (and a preemption candidate).
        res.outcome = PlacementOutcome::kNoCapacity;
        continue;
      }
      // A gang whose best is to grow a pool where some of its parts fit live nodes takes
      // them now: in the flow they are live GPUs any job may take, and the gang's new-node
      // bin would be short by what they hold.
      if (work.nodes > 1 && OptionIsNew(best_o) &&
          cap_.PartsFree(OptionEntry(best_o), work.gpus, work.nodes) > 0 &&
          GrowFor(cap_, OptionEntry(best_o), work, res)) {
        res.option = best_o;
        res.alt_option = best_o;
        continue;
      }
      if (shut_o >= 0 && cheapest_shut < best) {
        ConsiderWaiting(opts_, cap_, now_, config_, j, shut_o, best_o, best, p);
      }
      preps_.push_back(p);
    }
  }

  // 2. Rows of jobs that would rather run now than wait; coarser rows until the flow is
  // small. Jobs that may wait for cheaper capacity take what is left, in step 6.
  void GroupRows() {
    std::vector<int> key;
    for (int level = 0; level < kRowLevels; ++level) {
      groups_.clear();
      waiting_.clear();
      std::unordered_map<std::vector<int>, int, KeyHash> index;
      for (int i = 0; i < static_cast<int>(preps_.size()); ++i) {
        if (preps_[i].wait_option >= 0) {
          waiting_.push_back(i);
          continue;
        }
        RowKey(opts_, room_, preps_[i].job, level, key);
        auto [it, fresh] = index.try_emplace(key, static_cast<int>(groups_.size()));
        if (fresh) groups_.emplace_back();
        groups_[it->second].members.push_back(i);
      }
      if (static_cast<int>(groups_.size()) <= kMaxFlowRows) break;
    }
  }

  // 3. The flow: rows = groups, one source arc per priority tier present, bins = options;
  // the row's best-scored member speaks for its costs.
  FlowSolution SolveFlow() {
    fp_.rows = static_cast<int>(groups_.size());
    fp_.bin_capacity.resize(options_);
    for (int o = 0; o < options_; ++o) {
      int e = OptionEntry(o);
      fp_.bin_capacity[o] = OptionIsNew(o) ? cap_.NewCapacity(e) : cap_.FreeGpus(e);
    }
    std::vector<std::pair<double, int>> row_arcs;
    for (int g = 0; g < fp_.rows; ++g) {
      const auto& members = groups_[g].members;
      int top = preps_[members.front()].job;
      const Work& work = opts_.view(top).work;
      const int gpus = work.gpus;
      for (size_t k = 0; k < members.size();) {
        int tier = opts_.view(preps_[members[k]].job).tier;
        size_t n = 0;
        for (; k < members.size() && opts_.view(preps_[members[k]].job).tier == tier; ++k) ++n;
        fp_.sources.push_back({g, static_cast<std::int64_t>(n) * gpus, (7 - tier) * kTierStep});
      }
      // The row's cheapest options only: each arc costs every augmentation a relaxation,
      // and a job that would have needed a dearer one is placed by the repair step if room
      // is left.
      row_arcs.clear();
      for (int o = 0; o < options_; ++o) {
        double r = opts_.rate(top, o);
        if (r >= 0 && room_.Has(o, work)) row_arcs.push_back({r, o});
      }
      std::sort(row_arcs.begin(), row_arcs.end());
      if (row_arcs.size() > kMaxArcsPerRow) row_arcs.resize(kMaxArcsPerRow);
      for (auto [r, o] : row_arcs) fp_.arcs.push_back({g, o, room_.Room(o, work), std::llround(r)});
    }
    return SolveMinCostFlow(fp_);
  }

  // 4. Rounding: whole gangs per row and option; the cheapest option to the best scores.
  // What the flow left unplaced joins the jobs that may wait, for the repair step.
  void Round(const FlowSolution& sol) {
    std::vector<std::vector<int>> arcs_of(groups_.size());
    for (int a = 0; a < static_cast<int>(fp_.arcs.size()); ++a)
      arcs_of[fp_.arcs[a].row].push_back(a);
    leftovers_ = waiting_;
    for (int g = 0; g < fp_.rows; ++g) {
      auto& arcs = arcs_of[g];
      std::stable_sort(arcs.begin(), arcs.end(),
                       [&](int a, int b) { return fp_.arcs[a].cost < fp_.arcs[b].cost; });
      const auto& members = groups_[g].members;
      int gpus = opts_.view(preps_[members.front()].job).work.gpus;
      size_t next = 0;
      for (int a : arcs) {
        for (std::int64_t n = sol.arc_flow[a] / gpus; n > 0 && next < members.size(); --n)
          picks_.push_back({members[next++], fp_.arcs[a].bin});
      }
      while (next < members.size()) leftovers_.push_back(members[next++]);
    }
  }

  // 5. Bin packing: big gangs first, each on the fullest node that still fits it.
  void Pack() {
    std::stable_sort(picks_.begin(), picks_.end(), [&](const auto& a, const auto& b) {
      int ga = opts_.view(preps_[a.first].job).work.gpus;
      int gb = opts_.view(preps_[b.first].job).work.gpus;
      return ga != gb ? ga > gb : a.first < b.first;
    });
    for (auto [pi, o] : picks_) {
      if (!TryOption(pi, o)) leftovers_.push_back(pi);
    }
  }

  // 6. Repair, best score first: what rounding or fragmentation left over, and the jobs
  // that may wait, on any option with room that is cheaper than not running now. A job
  // still unplaced waits (for the capacity it chose to wait for, or for any).
  void Repair() {
    std::sort(leftovers_.begin(), leftovers_.end());
    std::vector<int> order;
    for (int pi : leftovers_) {
      const Prep& p = preps_[pi];
      const Work& w = opts_.view(p.job).work;
      order.clear();
      for (int o = 0; o < options_; ++o) {
        double r = opts_.rate(p.job, o);
        if (r < 0 || r >= p.unplaced) continue;
        int e = OptionEntry(o);
        if (OptionIsNew(o) ? cap_.NewCapacity(e) >= cap_.NewGpusFor(e, w.gpus, w.nodes,
                                                                    cap_.PartsFree(e, w.gpus, w.nodes))
                           : cap_.FreeGpus(e) >= w.gpus)
          order.push_back(o);
      }
      std::stable_sort(order.begin(), order.end(),
                       [&](int a, int b) { return opts_.rate(p.job, a) < opts_.rate(p.job, b); });
      bool done = false;
      for (int o : order) {
        if ((done = TryOption(pi, o))) break;
      }
      if (done) continue;
      JobResult& res = results_[p.job];
      res.outcome = p.wait_option >= 0 ? PlacementOutcome::kWaitCheaper : PlacementOutcome::kNoCapacity;
      res.option = p.wait_option;
      res.alt_option = p.alt_option;
      res.eta_hours = p.eta;
    }
  }

  // How long a one-node job would hold a live node of option o's pool, and the most idle
  // GPU-hours worth keeping paid for it: a new node of the pool sized to the job costs its
  // startup, so a live node is worth more idle than that only when the pool's nodes come
  // in a fixed size (a new one would idle as much), a new node is no option, or the job
  // is late (the earliest finish wins). A job with no estimate of its own is not judged.
  FreeRoom::Stay StayOn(int j, int o) const {
    FreeRoom::Stay stay;
    const JobView& v = opts_.view(j);
    const Work& work = v.work;
    if (work.nodes > 1 || !work.estimated) return stay;
    const int e = OptionEntry(o), fresh = o | 1;
    const model::Pool& pool = cap_.entry(e).pool;
    stay.run_hours = opts_.EstimateFor(j, o).run_hours;
    // Nodes still starting may not be the job's: the room for a node of its own is what is
    // left once they are counted.
    const int room = cap_.NewCapacity(e) - std::max(0, pool.requested_gpus);
    if (pool.node_gpus <= 0 && !v.late && opts_.rate(j, fresh) >= 0 && room >= work.gpus)
      stay.max_idle_gpu_hours = work.gpus * opts_.EstimateFor(j, fresh).startup_hours;
    return stay;
  }

  // Places prep `pi` on option `o` if it still has room: on live nodes, or on new ones the
  // pool grows by. False leaves the job for a later step.
  bool TryOption(int pi, int o) {
    const Prep& p = preps_[pi];
    const Work& work = opts_.view(p.job).work;
    int e = OptionEntry(o);
    JobResult& res = results_[p.job];
    if (OptionIsNew(o)) {
      if (!GrowFor(cap_, e, work, res)) return false;
    } else {
      res.slices = cap_.Take(e, work.gpus, config_.spread_large_jobs, work.nodes, StayOn(p.job, o));
      if (res.slices.empty()) return false;
      res.outcome = PlacementOutcome::kPlaced;
    }
    res.option = o;
    res.alt_option = p.alt_option;
    return true;
  }

  const ReadyJobs& opts_;
  FreeRoom& cap_;
  const Timestamp now_;
  const PolicyConfig& config_;
  std::vector<JobResult>& results_;
  const int options_;
  RoomCache room_;
  std::vector<Prep> preps_;
  std::vector<Group> groups_;
  std::vector<int> waiting_;                 // preps that may wait: not in the flow
  FlowProblem fp_;
  std::vector<std::pair<int, int>> picks_;   // prep index, option
  std::vector<int> leftovers_;               // prep indexes for the repair step
};

}  // namespace

void PlaceClass(const std::vector<int>& jobs_in, const ReadyJobs& opts, FreeRoom& cap,
                Timestamp now, const PolicyConfig& config, std::vector<JobResult>& results) {
  std::vector<int> jobs = jobs_in;
  std::sort(jobs.begin(), jobs.end(), [&](int a, int b) {
    const JobView &va = opts.view(a), &vb = opts.view(b);
    if (va.priority.score != vb.priority.score) return va.priority.score > vb.priority.score;
    return va.job->id < vb.job->id;
  });
  ClassPlacer(opts, cap, now, config, results).Run(jobs);
}

}  // namespace frugal::policy
