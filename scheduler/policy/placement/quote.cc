#include "scheduler/policy/placement/quote.h"

#include <algorithm>
#include <cmath>

#include "scheduler/policy/placement/cost_model.h"
#include "scheduler/policy/placement/explain.h"

namespace frugal::policy {

namespace {

Seconds ToSeconds(double hours) {
  return Seconds(static_cast<long long>(std::llround(std::min(hours, 1e12) * 3600)));
}

Micros Charge(const model::Pool& pool, int gpus, double hours) {
  return static_cast<Micros>(
      std::llround(std::min(9e18, static_cast<double>(pool.price_per_gpu_hour) * gpus * hours)));
}

// GPUs of one of the pool's nodes: what its provider adds, else its biggest registered
// node; 0 = not known yet.
int NodeSize(const model::Pool& pool) {
  return pool.node_gpus > 0 ? pool.node_gpus : pool.largest_node_gpus;
}

// Whether the pool can ever hold the gang; empty when it can.
std::string WhyCannotHold(const model::PendingJob& job, const model::Pool& pool,
                          const PolicyConfig& config) {
  if (!PoolFits(job.gpu_types, job.min_gpu_mem_gb, pool)) return "GPU type or memory not allowed";
  if (!MayRunOn(job.tolerance, pool.kind)) return "tolerance none never runs on spot";
  if (pool.max_gpus > 0 && job.gpus > pool.max_gpus)
    return "holds at most " + std::to_string(pool.max_gpus) + " GPU(s)";
  const int node = NodeSize(pool);
  if (job.nodes > 1) {
    const int per = job.gpus / job.nodes;
    if (node > 0 && per > node)
      return "nodes have " + std::to_string(node) + " GPU(s), each of the gang's " +
             std::to_string(job.nodes) + " parts needs " + std::to_string(per);
    return "";
  }
  if (node > 0 && job.gpus > node && !config.spread_large_jobs)
    return "nodes have " + std::to_string(node) + " GPU(s)";
  return "";
}

// Why no pool can hold `job` on one node, when every pool that allows it has nodes of a
// known size and all are too small; empty otherwise (a pool of unknown node size may hold it).
std::string NoNodeHolds(const model::PendingJob& job, const std::vector<model::Pool>& pools,
                        const PolicyConfig& config) {
  if (config.spread_large_jobs) return "";
  // A multi-node gang needs a node per part: WhyCannotHold says which pools are too small.
  if (job.nodes > 1) return "";
  int largest = 0;
  std::string where;
  bool any = false;
  for (const auto& p : pools) {
    if (!PoolFits(job.gpu_types, job.min_gpu_mem_gb, p) || !MayRunOn(job.tolerance, p.kind)) continue;
    const int node = NodeSize(p);
    if (node <= 0 || job.gpus <= node) return "";
    any = true;
    if (node > largest) largest = node, where = p.name;
  }
  if (!any) return "";
  return "no node can hold " + std::to_string(job.gpus) +
         " GPUs: the largest node of any pool this job may use has " + std::to_string(largest) +
         " GPUs (pool " + where + "). Ask for at most " + std::to_string(largest) +
         " GPUs, or run it as a multi-node gang: --nodes N --gpus-per-node G";
}

}  // namespace

Quote QuoteJob(const model::PendingJob& job, const std::vector<model::Pool>& pools_in,
               Timestamp now, const PolicyConfig& config, const SpotBook* book) {
  Quote q;
  if (book) q.learned = SpotOutlooks(job, pools_in, now, config, *book);
  std::vector<model::Pool> pools = pools_in;
  std::sort(pools.begin(), pools.end(), [](auto& a, auto& b) { return a.id < b.id; });
  Work work = WorkOf(job, config);

  double safe_hours = kNoLimit;
  for (const auto& p : pools) {
    if (!IsSafe(p.kind) || !WhyCannotHold(job, p, config).empty()) continue;
    double h = SafeHours(work, p);
    if (h < safe_hours) {
      safe_hours = h;
      q.earliest_pool = p.id;
      q.earliest_finish = now + ToSeconds(h);
    }
  }
  DeadlineView view = ViewDeadline(job.deadline, now, safe_hours, config);

  double best_rate = 0;
  const model::Pool* best = nullptr;
  PoolQuote best_quote;
  for (const auto& p : pools) {
    PoolQuote pq;
    pq.pool_id = p.id;
    pq.pool = p.name;
    pq.kind = p.kind;
    pq.gpu_type = p.gpu_type;
    int nodes = work.nodes > 1 ? work.nodes : NodesSpanned(work.gpus, NodeSize(p));
    Estimate e = EstimateOn(work, p, nodes, p.kind != model::CapacityKind::kReserved);
    pq.expected_cost = e.cost;
    pq.expected_wall = ToSeconds(e.startup_hours + e.wall_hours);
    pq.expected_finish = now + pq.expected_wall;
    pq.expected_preemptions = e.preemptions;
    // The range: no reclaim at the low end; at the high end two standard deviations more
    // reclaims (Poisson) than expected, each losing as much as it can.
    double high_reclaims = e.preemptions + 2 * std::sqrt(e.preemptions);
    double low_hours = e.run_hours, high_hours = e.run_hours + high_reclaims * e.loss_hours;
    if (!work.estimated) low_hours *= 0.5, high_hours *= 2;  // no estimate: a wide guess
    pq.low_cost = Charge(p, work.gpus, low_hours);
    pq.high_cost = std::max(e.cost, Charge(p, work.gpus, high_hours));
    pq.why_not = WhyCannotHold(job, p, config);
    if (pq.why_not.empty() && view.has_deadline && view.Feasible()) {
      if (IsSafe(p.kind) && !SafeMeets(e, view)) {
        pq.why_not = "finishes after the deadline";
      } else if (!IsSafe(p.kind) && !SpotCovered(e, view)) {
        pq.why_not = "slack " + RoughHours(view.slack_hours) + " does not cover the spot risk of " +
                     RoughHours(SpotRiskHours(e, view));
      }
    }
    pq.allowed = pq.why_not.empty();
    if (pq.allowed) {
      if (p.kind == model::CapacityKind::kOnDemand &&
          (!q.on_demand_pool || e.cost < q.on_demand_cost)) {
        q.on_demand_pool = p.id;
        q.on_demand_cost = e.cost;
      }
      double rate = DecisionRate(work, p, e, config);
      if (!best || rate < best_rate) best = &p, best_rate = rate, best_quote = pq;
    }
    q.pools.push_back(pq);
  }

  if (best) {
    q.recommended = best->id;
    q.recommendation = KindName(best->kind) + " " + best->name + ": ";
    if (best->kind == model::CapacityKind::kReserved) {
      q.recommendation += "already paid for";
    } else {
      q.recommendation += "expected " + Dollars(best_quote.expected_cost) + " (" +
                          Dollars(best_quote.low_cost) + " to " + Dollars(best_quote.high_cost) +
                          ")";
    }
    if (q.on_demand_pool && *q.on_demand_pool != best->id)
      q.recommendation += " vs " + Dollars(q.on_demand_cost) + " on-demand";
    if (best->kind == model::CapacityKind::kSpot) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.1f", best_quote.expected_preemptions);
      q.recommendation += std::string("; ") + buf + " expected preemption(s)";
    }
    q.recommendation += ", capacity permitting";
  } else {
    q.recommendation = "no pool may run this job";
  }

  q.unplaceable = NoNodeHolds(job, pools, config);
  if (!q.unplaceable.empty()) q.recommendation = q.unplaceable;
  if (job.deadline) {
    if (!q.earliest_finish) {
      q.deadline_feasible = false;
      q.refusal = "deadline " + FormatRfc3339(*job.deadline) +
                  " cannot be guaranteed: no reserved or on-demand pool can run this job";
    } else if (*job.deadline < *q.earliest_finish) {
      q.deadline_feasible = false;
      std::string name;
      for (const auto& p : pools)
        if (p.id == *q.earliest_pool) name = p.name;
      q.refusal = "deadline " + FormatRfc3339(*job.deadline) +
                  " cannot be met: the earliest feasible finish is " +
                  FormatRfc3339(*q.earliest_finish) + " on " + name;
    }
  }
  return q;
}

model::PendingJob PendingFromSpec(const model::JobSpec& spec, Timestamp created_at) {
  model::PendingJob j;
  j.gpus = spec.gpus;
  j.nodes = spec.nodes;
  j.gpu_types = spec.gpu_types;
  j.min_gpu_mem_gb = spec.min_gpu_mem_gb;
  if (auto rank = model::PriorityRank(spec.priority); rank.ok()) j.priority_rank = *rank;
  j.tolerance = spec.tolerance;
  j.deadline = spec.deadline;
  j.created_at = created_at;
  j.estimate = spec.estimate;
  j.checkpoint_interval = spec.checkpoint_interval;
  return j;
}

}  // namespace frugal::policy
