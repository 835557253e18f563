#include "scheduler/policy/placement/spot_book.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace frugal::policy {

namespace {

int Ticks(double hours, double tick_hours) {
  return static_cast<int>(std::ceil(hours / tick_hours - 1e-9));
}

// The work a table is solved for: a power of two, kBucketTicks at least.
int WorkBucket(int work) {
  int b = SpotBook::kBucketTicks;
  while (b < work && b < SpotBook::kMaxTicks) b *= 2;
  return b;
}

}  // namespace

std::optional<SpotDecision> SpotBook::Decide(const model::Pool& pool, const SpotJob& job) const {
  if (job.nodes <= 1) return DecideOn(pool, 1, job);
  auto it = pool.gang_availability.find(job.nodes);
  if (it == pool.gang_availability.end() || !it->second) return std::nullopt;
  model::Pool gang = pool;
  gang.availability = it->second;
  gang.preemption_prior_per_node_hour = pool.preemption_prior_per_node_hour * job.nodes;
  // Where "all N up" stands now is not tracked: while the pool is up, its gang spell is
  // read as fresh (age 0), as a pool with no evidence is; a pool that is down is down for
  // a gang too, for at least as long.
  if (gang.availability_now.up) gang.availability_now.spell_seconds = 0;
  return DecideOn(gang, job.nodes, job);
}

std::optional<SpotDecision> SpotBook::DecideOn(const model::Pool& pool, int nodes,
                                               const SpotJob& job) const {
  const auto& m = pool.availability;
  if (!m || m->bins() == 0 || job.od_price_per_gpu_hour <= 0) return std::nullopt;
  const double tick_h = static_cast<double>(m->tick_seconds) / 3600.0;
  SpotJobState st;
  st.time_left = std::max(0, static_cast<int>(std::floor(job.time_left_hours / tick_h + 1e-9)));
  st.work_left = std::max(1, Ticks(job.work_hours, tick_h));
  st.where = job.where;
  st.changeover_left = std::max(0, Ticks(job.changeover_left_hours, tick_h));
  const int changeover = std::max(1, Ticks(job.restore_hours, tick_h));
  // A job that saves on notice loses nothing to a reclaim: one-tick checkpoints.
  const int checkpoint = job.saves_on_notice || job.checkpoint_hours <= 0
                             ? 1
                             : std::max(1, static_cast<int>(std::lround(job.checkpoint_hours / tick_h)));
  if (job.checkpoint_hours <= 0 && !job.saves_on_notice) return std::nullopt;
  st.unsaved = checkpoint == 1 ? 0 : std::clamp(Ticks(job.unsaved_hours, tick_h) , 0, checkpoint - 1);
  // The work a table must hold: a reclaim rolls the job back to its latest checkpoint,
  // `unsaved` ticks more than it has left.
  const int reach = st.work_left + st.unsaved;
  if (checkpoint > kMaxCheckpointTicks || changeover > kMaxChangeoverTicks || reach > kMaxTicks)
    return std::nullopt;
  const double ratio =
      static_cast<double>(pool.price_per_gpu_hour) / job.od_price_per_gpu_hour;
  const int price_pct = std::clamp(static_cast<int>(std::lround(ratio * 20)) * 5, 0, 1000);
  const int age = static_cast<int>(
      std::min<std::int64_t>(pool.availability_now.spell_seconds / m->tick_seconds, 1 << 30));
  st.chain_state = m->State(pool.availability_now.up, age);

  // Few shapes, so that the solver keeps up with a cluster of many jobs: work in powers of
  // two, and time to the deadline up to twice that. A job with more time is decided as if
  // it had that much (at least its work again as slack) until its time falls inside.
  // Time is solved in quarters of the work bucket: a solve's cost grows with the area under
  // min(work, time), so a job with little slack does not pay for twice its work in time
  // (three times the cost). A table whose work holds the job's reach and whose time holds
  // its time (or the cap) is exact there, whatever its size: which covering table a
  // decision reads never changes it.
  const int work_bucket = WorkBucket(reach);
  const int time_cap = std::min(kMaxTicks, 2 * work_bucket);
  const int time_step = work_bucket / 4;
  const int want_time = std::clamp(std::max(st.time_left, st.work_left), 1, time_cap);
  std::shared_ptr<const SpotPolicy> table;
  std::shared_ptr<const SpotChain> chain;
  Key wanted{pool.id, nullptr, changeover, checkpoint, price_pct,
             std::min(time_cap, (want_time + time_step - 1) / time_step * time_step), work_bucket};
  {
    std::lock_guard<std::mutex> lock(mu_);
    chain = ChainLocked(pool, nodes);
    wanted.chain = chain.get();
    // Any solved table of this chain and shape that covers the job: the smallest.
    for (auto it = entries_.lower_bound(Key{pool.id, chain.get(), changeover, checkpoint, price_pct, 0, 0});
         it != entries_.end() && it->first.pool == pool.id && it->first.chain == chain.get() &&
         it->first.changeover == changeover && it->first.checkpoint == checkpoint &&
         it->first.price_pct == price_pct;
         ++it) {
      if (!it->second.table || it->first.max_work < reach) continue;
      if (it->first.max_time < std::min(st.time_left, time_cap)) continue;
      it->second.used = ++clock_;
      table = it->second.table;
      break;
    }
    if (!table) {
      Entry& e = entries_[wanted];
      if (!e.chain) e.chain = chain;
      e.used = ++clock_;
      if (!inline_) return std::nullopt;  // queued for SolvePending
    }
  }
  if (!table) {
    Entry copy;
    copy.chain = chain;
    table = Solve(wanted, copy);
    std::lock_guard<std::mutex> lock(mu_);
    // Kept only while the chain it was solved for is still held.
    if (HeldLocked({pool.id, nodes}, chain.get())) {
      Entry& e = entries_[wanted];
      if (!e.chain) e.chain = chain;
      if (!e.table) e.table = table;
      e.used = ++clock_;
      table = e.table;
      EvictLocked(pool.id);
    }
  }
  SpotDecision d;
  d.state = st;
  d.chain_state = st.chain_state;
  d.table = table;
  d.model = m;
  d.chain = chain;
  d.hazard = chain->hazard[st.chain_state];
  // Read at the capped time whatever table it is: a bigger one must not give more.
  SpotJobState read = st;
  read.time_left = std::min(st.time_left, time_cap);
  d.action = table->Action(read);
  d.tick_hours = tick_h;
  {
    SpotJobState idle = read;
    idle.where = JobWhere::kIdle;
    idle.changeover_left = 0;
    idle.unsaved = 0;
    d.expected_micros = table->IdleValue(idle) * job.od_price_per_gpu_hour * tick_h;
  }
  if (d.action == SpotAction::kSpot && !pool.availability_now.up) d.action = SpotAction::kWait;
  return d;
}

std::shared_ptr<const SpotPolicy> SpotBook::Solve(const Key& key, const Entry& entry) const {
  SpotDpShape shape;
  shape.max_time = key.max_time;
  shape.max_work = key.max_work;
  shape.changeover = key.changeover;
  shape.checkpoint = key.checkpoint;
  shape.spot_price = key.price_pct / 100.0;
  return std::make_shared<const SpotPolicy>(entry.chain->next, entry.chain->up, shape);
}

std::shared_ptr<const SpotChain> SpotBook::ChainLocked(const model::Pool& pool, int nodes) const {
  auto& held = chains_[{pool.id, nodes}];
  for (auto it = held.begin(); it != held.end(); ++it) {
    if ((*it)->model == pool.availability &&
        (*it)->prior_reclaims_per_hour == pool.preemption_prior_per_node_hour) {
      held.splice(held.begin(), held, it);
      return held.front();
    }
  }
  // A refitted model (or a changed prior) is a new chain; the least recently used one past
  // the limit goes, with its tables.
  while (!held.empty() && held.size() >= models_per_pool_) {
    const SpotChain* gone = held.back().get();
    for (auto it = entries_.begin(); it != entries_.end();)
      it = it->first.pool == pool.id && it->first.chain == gone ? entries_.erase(it) : std::next(it);
    held.pop_back();
  }
  auto c = std::make_shared<SpotChain>();
  const model::AvailabilityModel& m = *pool.availability;
  c->model = pool.availability;
  c->prior_reclaims_per_hour = pool.preemption_prior_per_node_hour;
  const auto prior = model::PriorFor(m.tick_seconds, pool.preemption_prior_per_node_hour,
                                     model::kOutagePriorHours);
  c->next = m.Transitions(prior.prior_ticks, prior.up_end, prior.down_end);
  c->up.resize(m.states());
  c->hazard.assign(m.states(), 0.0);
  for (int s = 0; s < m.states(); ++s) {
    c->up[s] = m.IsUp(s) ? 1 : 0;
    for (const auto& n : c->next[s])
      if (m.IsUp(n.state) != m.IsUp(s)) c->hazard[s] += n.p;
  }
  held.push_front(std::move(c));
  return held.front();
}

bool SpotBook::HeldLocked(const ChainKey& key, const SpotChain* chain) const {
  auto it = chains_.find(key);
  if (it == chains_.end()) return false;
  for (const auto& c : it->second)
    if (c.get() == chain) return true;
  return false;
}

std::string DescribeSpell(const model::Pool& pool, const SpotDecision& d) {
  const std::int64_t age = pool.availability_now.spell_seconds;
  const std::int64_t tick_min = d.model ? d.model->tick_seconds / 60 : 3;
  std::string span = age >= 3600 ? std::to_string(age / 3600) + "h " + std::to_string(age % 3600 / 60) + "m"
                                 : std::to_string(age / 60) + "m";
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f%%", 100 * d.hazard);
  if (pool.availability_now.assumed) {
    return pool.name + " assumed up (no node now, no stockout or reclaim since), " + pct +
           " chance of a reclaim per " + std::to_string(tick_min) + " minutes";
  }
  return pool.name + (pool.availability_now.up ? " up for " : " down for ") + span + ", " + pct +
         (pool.availability_now.up ? " chance of a reclaim" : " chance it returns") + " per " +
         std::to_string(tick_min) + " minutes";
}

int SpotBook::SolvePending(int max_tables) {
  int solved = 0;
  while (solved < max_tables) {
    Key key{};
    Entry copy;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [k, e] : entries_) {
        if (e.table) continue;
        key = k, copy = e, found = true;
        break;
      }
    }
    if (!found) return solved;
    auto table = Solve(key, copy);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(key);
    if (it != entries_.end() && !it->second.table) it->second.table = std::move(table);
    EvictLocked(key.pool);
    ++solved;
  }
  return solved;
}

void SpotBook::EvictLocked(model::PoolId pool) const {
  for (;;) {
    size_t bytes = 0;
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first.pool != pool || !it->second.table) continue;
      bytes += it->second.table->bytes();
      if (oldest == entries_.end() || it->second.used < oldest->second.used) oldest = it;
    }
    if (bytes <= max_bytes_ || oldest == entries_.end()) return;
    entries_.erase(oldest);
  }
}

std::map<model::PoolId, size_t> SpotBook::BytesPerPool() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<model::PoolId, size_t> out;
  for (const auto& [k, e] : entries_)
    if (e.table) out[k.pool] += e.table->bytes();
  return out;
}

int SpotBook::queued() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [k, e] : entries_) n += e.table ? 0 : 1;
  return n;
}

int SpotBook::tables() const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [k, e] : entries_) n += e.table ? 1 : 0;
  return n;
}

}  // namespace frugal::policy
