#include "scheduler/service/submit_service.h"

#include <spdlog/spdlog.h>

#include "scheduler/policy/guardrails/guardrails.h"

namespace frugal::service {

Status CheckQuote(const model::JobSpec& spec, const policy::Quote& quote) {
  if (!quote.unplaceable.empty()) return FailedPrecondition(quote.unplaceable, "gpus");
  // Only a deadline with an estimate can be checked; without pools nothing is known yet.
  if (spec.deadline && spec.estimate && !quote.deadline_feasible && quote.earliest_finish)
    return FailedPrecondition(quote.refusal, "deadline");
  return Status::Ok();
}

Status CheckDeadline(const model::JobSpec& spec, Timestamp now) {
  if (!spec.deadline) return Status::Ok();
  const Timestamp earliest = now + spec.estimate.value_or(Seconds(0));
  if (*spec.deadline > earliest) return Status::Ok();
  return FailedPrecondition(
      "deadline: " + FormatRfc3339(std::chrono::time_point_cast<Seconds>(*spec.deadline)) +
          " cannot be met; the earliest feasible deadline is " +
          FormatRfc3339(std::chrono::time_point_cast<Seconds>(earliest) + Seconds(1)),
      "deadline");
}

StatusOr<Quotes> SubmitService::Admit(std::vector<store::SubmitRequest>& reqs, bool check,
                                      std::size_t* refused) const {
  // The pools first: their reading's time is admission's, and step 0 needs it.
  ASSIGN_OR_RETURN(const store::PoolReading reading, store_.ReadPools());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (Status st = CheckDeadline(reqs[i].spec, reading.now); !st.ok()) {
      if (refused) *refused = i;
      return st;
    }
  }
  ASSIGN_OR_RETURN(const model::GuardrailSettings settings, store_.GetGuardrails());
  std::vector<model::JobSpec> specs;
  specs.reserve(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    auto spec = policy::ApplyClassRuntime(reqs[i].spec, settings);
    if (!spec.ok()) {
      if (refused) *refused = i;
      return spec.status();
    }
    reqs[i].spec = *std::move(spec);
    reqs[i].approval_reason = policy::ApprovalReason(reqs[i].spec, settings);
    specs.push_back(reqs[i].spec);
  }
  ASSIGN_OR_RETURN(auto quotes, advisor_.QuoteAll(specs, reading));
  if (!check) return quotes;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    if (Status st = CheckQuote(specs[i], quotes.quotes[i]); !st.ok()) {
      if (refused) *refused = i;
      return st;
    }
  }
  return quotes;
}

StatusOr<Submitted> SubmitService::Submit(const store::Principal& who,
                                          store::SubmitRequest req) const {
  std::vector<store::SubmitRequest> one;
  one.push_back(std::move(req));
  ASSIGN_OR_RETURN(auto quotes, Admit(one, true));
  Submitted out;
  out.admitted_at = quotes.now;
  out.quote = std::move(quotes.quotes.front());
  // Read before the job is stored, so the engine cannot have placed (and charged) it yet.
  if (auto st = store_.GetBudgetStatus(who.team, std::nullopt); st.ok()) out.budget = *st;
  ASSIGN_OR_RETURN(out.result, store_.Submit(who, one.front()));
  if (out.result.created) {
    spdlog::info(R"("event":"job_submitted","job_id":{},"team":"{}","gpus":{})", out.result.job.id,
                 out.result.job.team, out.result.job.spec.gpus);
    kick_();
  }
  return out;
}

StatusOr<Submitted> SubmitService::DryRun(store::SubmitRequest& req) const {
  std::vector<store::SubmitRequest> one;
  one.push_back(req);
  ASSIGN_OR_RETURN(auto quotes, Admit(one, false));
  req = std::move(one.front());
  Submitted out;
  out.admitted_at = quotes.now;
  out.quote = std::move(quotes.quotes.front());
  return out;
}

StatusOr<BatchSubmitted> SubmitService::SubmitBatch(const store::Principal& who,
                                                    std::vector<store::SubmitRequest> reqs,
                                                    std::size_t* refused) const {
  ASSIGN_OR_RETURN(auto quotes, Admit(reqs, true, refused));
  BatchSubmitted out;
  for (const auto& q : quotes.quotes) {
    if (const auto* p = q.RecommendedPool()) out.expected_cost += p->expected_cost;
  }
  ASSIGN_OR_RETURN(out.items, store_.SubmitBatch(who, reqs));
  int created = 0;
  for (const auto& item : out.items) created += item.created ? 1 : 0;
  if (created > 0) {
    spdlog::info(R"("event":"jobs_submitted","team":"{}","count":{},"first_id":{})", who.team,
                 created, out.items.front().id);
    kick_();
  }
  return out;
}

StatusOr<ArraySubmitted> SubmitService::SubmitArray(const store::Principal& who,
                                                    store::ArrayRequest req) const {
  std::vector<store::SubmitRequest> one;
  one.push_back(std::move(req.task));
  ASSIGN_OR_RETURN(auto quotes, Admit(one, true));
  req.task = std::move(one.front());
  ArraySubmitted out;
  out.quote = std::move(quotes.quotes.front());
  ASSIGN_OR_RETURN(out.result, store_.SubmitArray(who, req));
  if (out.result.created) {
    spdlog::info(R"("event":"array_submitted","array_id":{},"team":"{}","tasks":{})",
                 out.result.array.id, out.result.array.team, out.result.array.task_count);
    kick_();
  }
  return out;
}

}  // namespace frugal::service
