// The learned spot controller's tables, and the one question placement asks of them
// (issue 14, decision 0023): for this deadline job and this spot pool, with the pool's
// learned availability chain, is it best to run on spot, on on-demand, or to wait?
//
// A SpotBook caches solved SpotPolicy tables (spot_dp.h), keyed by the pool's fitted model
// and the job's shape in ticks: changeover (restore), checkpoint interval, spot price as a
// share of on-demand (in 5% buckets), and the largest work solved for (a power of two, 128
// ticks at least) with time in quarters of that, up to twice it: one table serves every
// smaller job and the rest of a job's life, and a job with more time is decided as if it
// had twice its work bucket. Every table is exact up to its own size, so which covering
// table a decision reads never changes it. A table
// takes 1-3 s of one core to solve, so Decide never solves one: a missing table is queued
// and the job is decided by the rules of decisions 0014/0015 until the engine's background
// thread has solved it (SolvePending). The simulator builds its book with `solve_inline`,
// so every decision has its table.
//
// Memory: a table holds the policy only, a few MB for a 48-hour job; each pool's tables are
// kept under `max_bytes_per_pool` (default 64 MB), the least recently used going first, and
// only for the pool's `models_per_pool` most recently used fitted models (default 1).
//
// Thread-safety: every method may be called concurrently (one mutex; solving runs outside
// it). The plan of a Decide depends on the snapshot and on which tables are ready.
#pragma once

#include <cstdint>
#include <list>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "scheduler/model/pool.h"
#include "scheduler/policy/placement/spot_dp.h"

namespace frugal::policy {

// A job in the controller's terms, before the conversion to ticks.
struct SpotJob {
  double time_left_hours = 0;   // to the deadline, less the deadline margin
  double work_hours = 0;        // wall time of the work left on this pool, no restore
  double restore_hours = 0;     // paid at each launch
  double checkpoint_hours = 0;  // between periodic checkpoints; 0: checkpoints on notice only
  bool saves_on_notice = false; // its final checkpoint fits in the pool's reclaim notice
  JobWhere where = JobWhere::kIdle;
  double changeover_left_hours = 0;  // restore still to pay where it runs now
  double unsaved_hours = 0;          // run since its latest checkpoint (on spot)
  double od_price_per_gpu_hour = 0;  // the safe alternative's price (speed-adjusted)
  int nodes = 1;  // > 1: a multi-node gang, decided with the pool's chain for its size
};

// A pool's fitted model as the controller uses it: the chain's transitions with the pool's
// prior mixed in, which states are up, and each state's chance of its spell ending next
// tick. Built once per fitted model (and prior), shared by every decision and table.
struct SpotChain {
  std::shared_ptr<const model::AvailabilityModel> model;
  double prior_reclaims_per_hour = 0;
  std::vector<std::vector<model::AvailabilityModel::Next>> next;
  std::vector<std::uint8_t> up;
  std::vector<double> hazard;
};

// The controller's answer, with what it rests on (for reasons and `frugal why`).
struct SpotDecision {
  SpotAction action = SpotAction::kOnDemand;
  int chain_state = 0;
  std::shared_ptr<const SpotPolicy> table;
  std::shared_ptr<const model::AvailabilityModel> model;
  std::shared_ptr<const SpotChain> chain;
  SpotJobState state;  // in ticks
  double hazard = 0;   // chance the current spell ends in the next tick (a reclaim when up)
  // Expected cost per GPU of the job from here if it goes to (or waits for) this pool and
  // is run by the controller, on-demand fallback included, in micro-dollars; infinite when
  // the table cannot meet the deadline. Comparable across the pools of one job.
  double expected_micros = 0;
  double tick_hours = 0.05;
};

// "spot-a up for 2h 15m, 1.2% chance of a reclaim per 3 minutes" (or the outage's return).
std::string DescribeSpell(const model::Pool& pool, const SpotDecision& d);

class SpotBook {
 public:
  // `models_per_pool`: how many of a pool's fitted models (with their priors) keep their
  // tables, the most recently used first. The scheduler decides with one model per pool at
  // a time, so 1: a refitted model replaces the pool's tables. The simulator shares a book
  // among runs that learned from different pasts, interleaved on several threads: with 1,
  // each run's decision would drop the other runs' tables and every decision would solve.
  explicit SpotBook(bool solve_inline = false, size_t max_bytes_per_pool = 64u << 20,
                    int models_per_pool = 1)
      : inline_(solve_inline),
        max_bytes_(max_bytes_per_pool),
        models_per_pool_(models_per_pool < 1 ? 1 : models_per_pool) {}

  // The learned decision for `job` on spot pool `pool`, or empty when the controller does
  // not apply (no fitted model, a job too long or with checkpoints too far apart for a
  // table, a missing price) or its table is not solved yet (then it is queued).
  // A gang of N nodes (decision 0032) is decided with the pool's "all N up" chain
  // (Pool::gang_availability) and the admin's prior times N, as if its nodes were
  // reclaimed independently until the evidence says how they are, its spell read as fresh
  // while the pool is up (where "all N up" stands now is not tracked); with no chain
  // fitted for its size yet, the controller does not apply.
  std::optional<SpotDecision> Decide(const model::Pool& pool, const SpotJob& job) const;

  // Solves queued tables (the engine's background thread), at most `max_tables` of them;
  // returns how many it solved.
  int SolvePending(int max_tables = std::numeric_limits<int>::max());
  // Bytes held per pool, and tables held in all.
  std::map<model::PoolId, size_t> BytesPerPool() const;
  int tables() const;
  // Tables queued and not solved yet.
  int queued() const;

  // The most ticks of time or work a table is solved for (about 4 days at 3-minute
  // ticks), and the longest checkpoint interval and restore it handles, in ticks: beyond
  // them the table's size or solve time would break the limits, and the rules decide.
  static constexpr int kMaxTicks = 2048;
  static constexpr int kMaxCheckpointTicks = 40;
  static constexpr int kMaxChangeoverTicks = 20;
  static constexpr int kBucketTicks = 128;

 private:
  struct Key {
    model::PoolId pool;
    const SpotChain* chain;  // the model and prior the table was solved for
    int changeover, checkpoint, price_pct, max_time, max_work;
    bool operator<(const Key& o) const {
      return std::tie(pool, chain, changeover, checkpoint, price_pct, max_time, max_work) <
             std::tie(o.pool, o.chain, o.changeover, o.checkpoint, o.price_pct, o.max_time,
                      o.max_work);
    }
  };
  struct Entry {
    std::shared_ptr<const SpotChain> chain;  // keeps Key::chain alive
    std::shared_ptr<const SpotPolicy> table;  // null: queued
    std::uint64_t used = 0;
  };
  std::shared_ptr<const SpotPolicy> Solve(const Key& key, const Entry& entry) const;
  void EvictLocked(model::PoolId pool) const;
  // Decide on `pool` as the chain for gangs of `nodes` sees it (its `availability` and
  // prior are that chain's).
  std::optional<SpotDecision> DecideOn(const model::Pool& pool, int nodes,
                                       const SpotJob& job) const;
  // The chain of the pool's current model and prior for gangs of `nodes` (1: single-node
  // jobs), made the most recently used; a new one past `models_per_pool_` drops the least
  // recently used chain's tables.
  using ChainKey = std::pair<model::PoolId, int>;
  std::shared_ptr<const SpotChain> ChainLocked(const model::Pool& pool, int nodes) const;
  bool HeldLocked(const ChainKey& key, const SpotChain* chain) const;

  bool inline_;
  size_t max_bytes_;
  size_t models_per_pool_;
  mutable std::mutex mu_;
  mutable std::map<Key, Entry> entries_;
  // Per pool and gang size, its chains, the most recently used first.
  mutable std::map<ChainKey, std::list<std::shared_ptr<const SpotChain>>> chains_;
  mutable std::uint64_t clock_ = 0;
};

}  // namespace frugal::policy
