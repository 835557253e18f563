#include "bench/sim/frugal_controller.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

namespace frugal::sim {

namespace {

// 2023-01-01T00:00:00Z: any fixed instant works; the policy sees only differences.
constexpr std::int64_t kEpochSeconds = 1672531200;

model::NodeId NodeId(int where, int k) {
  return where == kOnDemand ? 100000 + k : (where + 1) * 1000 + k;
}

model::PoolId PoolOf(int where) { return where == kOnDemand ? kOnDemandPool : where + 1; }

Micros PerGpuHour(double usd_per_instance_hour, int gpus_per_instance) {
  return static_cast<Micros>(std::llround(usd_per_instance_hour / gpus_per_instance * 1e6));
}

// The bins of the learned chain (decision 0017: 8 against 1 gave 87.2% against 82.7%; 12
// changed nothing).
constexpr int kModelBins = 8;
// Learning online (learn_until_step < 0), the model is refitted once a day of the series:
// a refit changes the model and so every table, which costs seconds to solve.
constexpr int kRefitSeconds = 24 * 3600;

// Models fitted on a zone's steps [0, end), shared by every controller and thread: the same
// model object lets every run on a case share its solved tables (SpotBook keys on it).
std::shared_ptr<const model::AvailabilityModel> ModelFor(const Market& m, int zone, int end) {
  static std::mutex mu;
  static std::map<std::tuple<const void*, size_t, int, int, std::string, double, double>,
                  std::shared_ptr<const model::AvailabilityModel>>
      cache;
  const Zone& z = m.zones[zone];
  end = std::clamp(end, 0, static_cast<int>(z.up.size()));
  // The zone's data, its length and the window identify the fit while the market lives.
  // A market freed since may leave its address to another of the same length, so the
  // zone's name and its outages and hours down before `end` are part of the key too.
  auto prefix = [end](const std::vector<double>& v) {
    return end < static_cast<int>(v.size()) ? v[end] : -1.0;
  };
  auto key = std::make_tuple(static_cast<const void*>(z.up.data()), z.up.size(), end,
                             m.step_seconds, z.name, prefix(z.outages), prefix(z.down_hours));
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  if (cache.size() > 256) cache.clear();  // markets of earlier experiments are gone
  auto fitted = FitModel(m, zone, end);
  cache.emplace(key, fitted);
  return fitted;
}

}  // namespace

std::shared_ptr<const model::AvailabilityModel> FitModel(const Market& m, int zone, int end) {
  const Zone& z = m.zones[zone];
  end = std::clamp(end, 0, static_cast<int>(z.up.size()));
  auto fitted = std::make_shared<model::AvailabilityModel>(
      model::AvailabilityModel::Empty(m.step_seconds, kModelBins));
  fitted->AddSeries(std::vector<std::uint8_t>(z.up.begin(), z.up.begin() + end));
  return fitted;
}

int OnlineFitEnd(const Market& m, int step) {
  const int every = std::max(1, kRefitSeconds / static_cast<int>(m.step_seconds));
  return std::clamp(step, 0, m.steps) / every * every;
}

Timestamp SimTime(const Market& m, int step) {
  return Timestamp{} + Seconds(kEpochSeconds + static_cast<std::int64_t>(step) * m.step_seconds);
}

void FrugalController::Reset() {
  last_decision_t_ = -1000000;
  decisions_ = 0;
}

model::Snapshot FrugalController::SnapshotFor(const StepView& v, bool pending) const {
  const Market& m = *v.market;
  const JobShape& job = *v.job;
  model::Snapshot s;
  s.now = SimTime(m, v.step);
  const int gpi = m.gpus_per_instance;
  auto add_pool = [&](int where) {
    model::Pool p;
    p.id = PoolOf(where);
    p.kind = where == kOnDemand ? model::CapacityKind::kOnDemand : model::CapacityKind::kSpot;
    p.name = where == kOnDemand ? "on-demand" : "spot-" + m.zones[where].name;
    p.gpu_type = m.gpu;
    p.price_per_gpu_hour = PerGpuHour(m.Price(where, v.step), gpi);
    p.max_gpus = m.instances * gpi;
    p.node_gpus = gpi;
    if (where >= 0) {
      const Zone& z = m.zones[where];
      int past = std::clamp(v.step, 0, m.steps);
      p.preemption_prior_per_node_hour = options_.prior_per_node_hour;
      p.preemption_rate_per_node_hour = model::LearnedPreemptionRate(
          options_.prior_per_node_hour, z.reclaims[past], z.node_hours[past]);
      p.mean_outage_hours = model::LearnedOutageHours(z.outages[past], z.down_hours[past]);
      // The learned controller's model: the series before `learn_until_step` (or, online,
      // before the last refit), never the job's future.
      int end = options_.learn_until_step >= 0 ? std::min(options_.learn_until_step, past)
                                               : OnlineFitEnd(m, past);
      if (end > 0) p.availability = ModelFor(m, where, end);
      const bool up = m.Up(where, v.step);
      int age = 0;
      for (int j = v.step - 1; j >= 0 && (z.up[j] != 0) == up && age < 100000; --j) ++age;
      p.availability_now = {up, static_cast<std::int64_t>(age) * m.step_seconds};
    }
    s.pools.push_back(p);
    if (where >= 0 && !m.Up(where, v.step)) return;  // a zone that is down has no nodes
    for (int k = 0; k < m.instances; ++k) {
      model::Node n;
      n.id = NodeId(where, k);
      n.name = where == kOnDemand ? std::string("od") : std::string("z").append(std::to_string(where));
      n.name.append("-").append(std::to_string(k));
      n.pool_id = p.id;
      n.gpus = gpi;
      n.gpu_type = m.gpu;
      n.lease_expires_at = s.now + Seconds(3600);
      s.nodes.push_back(n);
    }
  };
  for (int z = 0; z < static_cast<int>(m.zones.size()); ++z) add_pool(z);
  add_pool(kOnDemand);

  const Timestamp deadline = SimTime(m, job.start + job.deadline);
  const Seconds estimate(static_cast<std::int64_t>(job.work) * m.step_seconds);
  const Seconds interval(static_cast<std::int64_t>(job.checkpoint) * m.step_seconds);
  double progress = static_cast<double>(v.saved) / job.work;
  if (pending || v.where == kIdle) {
    // Stopped in this very step: the stop order checkpointed what had been done.
    if (v.where != kIdle && v.changeover_left == 0) progress = static_cast<double>(v.progress) / job.work;
    model::PendingJob p;
    p.id = kSimJob;
    p.team_id = 1;
    p.gpus = m.instances * gpi;
    p.tolerance = model::Tolerance::kCheckpointed;
    p.deadline = deadline;
    p.created_at = SimTime(m, job.start);
    p.estimate = estimate;
    p.checkpoint_interval = interval;
    p.progress = progress;
    s.pending.push_back(p);
    return s;
  }
  for (int k = 0; k < m.instances; ++k) {
    model::RunningAttempt a;
    a.attempt_id = 1 + v.attempt_start;
    a.job_id = kSimJob;
    a.node_id = NodeId(v.where, k);
    a.gpus = gpi;
    a.pool_id = PoolOf(v.where);
    a.team_id = 1;
    a.started_at = SimTime(m, job.start + v.attempt_start);
    if (v.last_checkpoint >= 0) a.last_checkpoint_at = SimTime(m, job.start + v.last_checkpoint);
    a.progress = progress;
    a.tolerance = model::Tolerance::kCheckpointed;
    a.deadline = deadline;
    a.estimate = estimate;
    a.checkpoint_interval = interval;
    s.running.push_back(a);
  }
  return s;
}

int FrugalController::Apply(const model::Plan& plan, const StepView& v, int stay) const {
  for (const auto& stop : plan.stops)
    if (stop.job_id == kSimJob) return kIdle;
  for (const auto& a : plan.assignments) {
    if (a.job_id != kSimJob) continue;
    model::NodeId n = a.node_id;
    if (n >= 100000) return kOnDemand;
    int zone = static_cast<int>(n / 1000) - 1;
    return zone >= 0 && zone < static_cast<int>(v.market->zones.size()) ? zone : stay;
  }
  return stay;
}

bool FrugalController::MarketChanged(const StepView& v) const {
  if (v.step <= 0) return true;
  const Market& m = *v.market;
  for (int z = 0; z < static_cast<int>(m.zones.size()); ++z) {
    if (m.Up(z, v.step) != m.Up(z, v.step - 1)) return true;
    if (m.Price(z, v.step) != m.Price(z, v.step - 1)) return true;
  }
  return false;
}

int FrugalController::DecideOnce(const StepView& v, bool pending, int stay) {
  ++decisions_;
  model::Snapshot snapshot = SnapshotFor(v, pending);
  model::Plan plan = policy_.Decide(snapshot);
  if (observer_) observer_(v, snapshot, plan);
  return Apply(plan, v, stay);
}

int FrugalController::Decide(const StepView& v) {
  bool due = v.where == kIdle || v.t - last_decision_t_ >= options_.cycle_steps ||
             MarketChanged(v);
  if (!due) return v.where;
  last_decision_t_ = v.t;
  int target = DecideOnce(v, false, v.where);
  // A stop: the attempt ends (checkpointed) and the next cycle sees the job pending.
  if (target == kIdle && v.where != kIdle) target = DecideOnce(v, true, kIdle);
  return target;
}

}  // namespace frugal::sim
