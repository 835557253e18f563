#include "scheduler/policy/admission/budget.h"

#include <map>

#include "scheduler/policy/admission/admission.h"
#include "scheduler/policy/placement/cost_model.h"

namespace frugal::policy {

namespace {

const model::Pool* PoolOf(const model::Snapshot& s, model::PoolId id) {
  for (const auto& p : s.pools)
    if (p.id == id) return &p;
  return nullptr;
}

bool Paid(const model::Pool& pool) { return pool.kind != model::CapacityKind::kReserved; }

bool MayUse(const model::PendingJob& job, const model::Pool& pool) {
  return PoolFits(job.gpu_types, job.min_gpu_mem_gb, pool) && MayRunOn(job.tolerance, pool.kind);
}

}  // namespace

std::string MoneyText(Micros m) {
  std::string digits = FormatDollars(m < 0 ? -m : m);  // "1234567.80"
  const size_t dot = digits.find('.');
  std::string whole = digits.substr(0, dot), grouped;
  for (size_t i = 0; i < whole.size(); ++i) {
    if (i > 0 && (whole.size() - i) % 3 == 0) grouped += ',';
    grouped += whole[i];
  }
  return std::string(m < 0 ? "-$" : "$") + grouped + digits.substr(dot);
}

BudgetBook::BudgetBook(const model::Snapshot& s) : snapshot_(s) {
  for (const auto& [team, b] : s.budgets) any_hard_ = any_hard_ || b.hard;
}

std::string BudgetBook::Holding(model::TeamId team, const model::Pool& pool, Micros cost) const {
  if (!Paid(pool)) return "";
  auto b = snapshot_.budgets.find(team);
  if (b == snapshot_.budgets.end() || !b->second.hard) return "";
  auto t = taken_.find(team);
  const Micros used = b->second.used() + (t == taken_.end() ? 0 : t->second);
  // Compared as used + cost > limit without overflow: amounts are non-negative.
  if (cost <= b->second.limit && used <= b->second.limit - cost) return "";
  return "over budget: team " + b->second.team + " used " + MoneyText(used) + " of its " +
         MoneyText(b->second.limit) + " " + model::ToString(b->second.period) +
         " hard limit; this job's expected " + MoneyText(cost) +
         " does not fit; only reserved capacity is open";
}

void BudgetBook::Take(model::TeamId team, const model::Pool& pool, Micros cost) {
  if (Paid(pool)) taken_[team] += cost;
}

Micros ExpectedCost(const model::PendingJob& job, const model::Pool& pool,
                    const PolicyConfig& config) {
  Work work = WorkOf(job, config);
  return EstimateOn(work, pool, NodesSpanned(work.gpus, pool.node_gpus), false).cost;
}

void EnforceBudgets(const model::Snapshot& s, model::Plan& plan, const PolicyConfig& config) {
  BudgetBook book(s);
  std::map<model::JobId, const model::PendingJob*> jobs;
  for (const auto& j : s.pending) jobs[j.id] = &j;
  std::map<model::NodeId, const model::Pool*> pool_of_node;
  for (const auto& n : s.nodes) pool_of_node[n.id] = PoolOf(s, n.pool_id);

  // A gang's parts share a job id and a pool: its expected cost is the sum of the parts'.
  std::map<model::JobId, Micros> job_cost;
  std::map<model::JobId, size_t> first_part;
  for (size_t i = 0; i < plan.assignments.size(); ++i) {
    const auto& a = plan.assignments[i];
    job_cost[a.job_id] += a.expected_cost;
    first_part.try_emplace(a.job_id, i);
  }
  for (auto& [id, cost] : job_cost) {
    auto j = jobs.find(id);
    auto& first = plan.assignments[first_part[id]];
    auto p = pool_of_node.find(first.node_id);
    if (cost > 0 || j == jobs.end() || p == pool_of_node.end() || !p->second) continue;
    // A policy that does not price its choices (placement/fifo): price it here, so the
    // budget check and the attempt's recorded commitment have a figure.
    cost = ExpectedCost(*j->second, *p->second, config);
    first.expected_cost = cost;
  }
  if (!book.any_hard()) return;

  AdmissionRules rules;
  rules.part_amount = [](const model::Assignment& a) { return a.expected_cost; };
  rules.holding = [&](const model::PendingJob& job, const model::Pool& pool, Amount cost) {
    return book.Holding(job.team_id, pool, cost);
  };
  rules.take = [&](const model::PendingJob& job, const model::Pool& pool, Amount cost) {
    book.Take(job.team_id, pool, cost);
  };
  // A waiting job cites the budget only on paid pools it fits (the reason shown is the
  // cheapest's: the smallest expected cost that still does not fit), and not at all while it
  // waits for a dependency, which is the reason it keeps.
  rules.ask_on = [&](const model::PendingJob& job, const model::Pool& p) -> std::optional<Amount> {
    if (!Ready(job) || !Paid(p) || !MayUse(job, p)) return std::nullopt;
    return ExpectedCost(job, p, config);
  };
  EnforceAdmission(s, plan, rules);
  HoldNodeRequests(s, plan, rules, "their team's hard budget");
}

}  // namespace frugal::policy
