#include "scheduler/policy/admission/quota.h"

#include "scheduler/policy/admission/admission.h"
#include "scheduler/policy/placement/cost_model.h"

namespace frugal::policy {

namespace {

const char* KindWords(model::CapacityKind k) {
  switch (k) {
    case model::CapacityKind::kReserved: return "reserved";
    case model::CapacityKind::kOnDemand: return "on-demand";
    case model::CapacityKind::kSpot: return "spot";
  }
  return "";
}

const model::Pool* PoolOf(const model::Snapshot& s, model::PoolId id) {
  for (const auto& p : s.pools)
    if (p.id == id) return &p;
  return nullptr;
}

}  // namespace

QuotaBook::QuotaBook(const model::Snapshot& s) : snapshot_(s) {
  for (const auto& r : s.running) {
    const model::Pool* pool = PoolOf(s, r.pool_id);
    if (!pool) continue;
    by_kind_[{r.team_id, pool->kind}] += r.gpus;
    by_pool_[{r.team_id, pool->id}] += r.gpus;
  }
}

std::string QuotaBook::Holding(model::TeamId team, const model::Pool& pool, int gpus) const {
  auto q = snapshot_.quotas.find(team);
  if (q == snapshot_.quotas.end()) return "";
  auto in_use = [](const auto& m, const auto& key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  };
  if (auto k = q->second.by_kind.find(pool.kind); k != q->second.by_kind.end()) {
    const int used = in_use(by_kind_, std::pair{team, pool.kind});
    if (used + gpus > k->second)
      return "over team quota: " + std::to_string(used) + "/" + std::to_string(k->second) + " " +
             KindWords(pool.kind) + " GPUs in use";
  }
  if (auto p = q->second.by_pool.find(pool.id); p != q->second.by_pool.end()) {
    const int used = in_use(by_pool_, std::pair{team, pool.id});
    if (used + gpus > p->second)
      return "over team quota: " + std::to_string(used) + "/" + std::to_string(p->second) +
             " GPUs of pool " + pool.name + " in use";
  }
  return "";
}

bool QuotaBook::Allows(model::TeamId team, const model::Pool& pool, int gpus) const {
  return Holding(team, pool, gpus).empty();
}

void QuotaBook::Take(model::TeamId team, const model::Pool& pool, int gpus) {
  by_kind_[{team, pool.kind}] += gpus;
  by_pool_[{team, pool.id}] += gpus;
}

void EnforceQuotas(const model::Snapshot& s, model::Plan& plan) {
  if (s.quotas.empty()) return;
  QuotaBook book(s);
  AdmissionRules rules;
  rules.part_amount = [](const model::Assignment& a) { return Amount{a.gpus}; };
  rules.holding = [&](const model::PendingJob& job, const model::Pool& pool, Amount gpus) {
    return book.Holding(job.team_id, pool, static_cast<int>(gpus));
  };
  rules.take = [&](const model::PendingJob& job, const model::Pool& pool, Amount gpus) {
    book.Take(job.team_id, pool, static_cast<int>(gpus));
  };
  // A waiting job cites a quota only on pools its GPU type and tolerance allow.
  rules.ask_on = [](const model::PendingJob& job,
                    const model::Pool& p) -> std::optional<Amount> {
    if (!PoolFits(job.gpu_types, job.min_gpu_mem_gb, p)) return std::nullopt;
    if (job.tolerance == model::Tolerance::kNone && p.kind == model::CapacityKind::kSpot)
      return std::nullopt;
    return job.gpus;
  };
  EnforceAdmission(s, plan, rules);
  // A node started for a job over its quota would idle until its pool's idle timeout.
  HoldNodeRequests(s, plan, rules, "their team's quota");
}

}  // namespace frugal::policy
