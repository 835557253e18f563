#include "scheduler/service/submit_service.h"

#include <spdlog/spdlog.h>

#include <exception>
#include <map>
#include <optional>
#include <utility>

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

namespace {
// One line per stored job, alone or in a group.
void LogSubmitted(const model::Job& job) {
  spdlog::info(R"("event":"job_submitted","job_id":{},"team":"{}","gpus":{})", job.id, job.team,
               job.spec.gpus);
}
}  // namespace

StatusOr<SubmitService::Admission> SubmitService::AdmitEach(std::vector<store::SubmitRequest>& reqs,
                                                            bool check) const {
  Admission a;
  a.refusals.assign(reqs.size(), Status::Ok());
  a.steps.assign(reqs.size(), -1);
  auto refuse = [&](std::size_t i, int step, Status st) {
    a.refusals[i] = std::move(st);
    a.steps[i] = step;
  };
  // The pools first: their reading's time is admission's, and step 0 needs it.
  ASSIGN_OR_RETURN(const store::PoolReading reading, store_.ReadPools());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (Status st = CheckDeadline(reqs[i].spec, reading.now); !st.ok()) refuse(i, 0, st);
  }
  ASSIGN_OR_RETURN(const model::GuardrailSettings settings, store_.GetGuardrails());
  std::vector<model::JobSpec> specs;
  std::vector<std::size_t> asked;  // the requests quoted, in order
  specs.reserve(reqs.size());
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (a.steps[i] >= 0) continue;
    auto spec = policy::ApplyClassRuntime(reqs[i].spec, settings);
    if (!spec.ok()) {
      refuse(i, 1, spec.status());
      continue;
    }
    reqs[i].spec = *std::move(spec);
    reqs[i].approval_reason = policy::ApprovalReason(reqs[i].spec, settings);
    specs.push_back(reqs[i].spec);
    asked.push_back(i);
  }
  ASSIGN_OR_RETURN(auto quotes, advisor_.QuoteAll(specs, reading));
  a.quotes.now = quotes.now;
  a.quotes.quotes.resize(reqs.size());
  for (std::size_t k = 0; k < asked.size(); ++k) {
    const std::size_t i = asked[k];
    a.quotes.quotes[i] = std::move(quotes.quotes[k]);
    if (!check) continue;
    if (Status st = CheckQuote(reqs[i].spec, a.quotes.quotes[i]); !st.ok()) refuse(i, 3, st);
  }
  return a;
}

StatusOr<Quotes> SubmitService::Admit(std::vector<store::SubmitRequest>& reqs, bool check,
                                      std::size_t* refused) const {
  ASSIGN_OR_RETURN(Admission a, AdmitEach(reqs, check));
  // The refusal of the earliest step, and of the first request refused there.
  std::size_t first = reqs.size();
  for (std::size_t i = 0; i < reqs.size(); ++i) {
    if (a.steps[i] >= 0 && (first == reqs.size() || a.steps[i] < a.steps[first])) first = i;
  }
  if (first < reqs.size()) {
    if (refused) *refused = first;
    return a.refusals[first];
  }
  return std::move(a.quotes);
}

StatusOr<Submitted> SubmitService::SubmitAlone(const store::Principal& who,
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
    LogSubmitted(out.result.job);
    kick_();
  }
  return out;
}

struct SubmitService::Waiting {
  const store::Principal* who;
  store::SubmitRequest req;
  std::optional<StatusOr<Submitted>> out;  // guarded by mu_
  // Its own, so that an answer wakes only its request's thread: one shared to all woke
  // every queued thread at each group's end (decision 0052).
  std::condition_variable wake;
};

namespace {
// The most requests one group takes: enough for every client of a busy API server, few
// enough that one INSERT stays short.
constexpr std::size_t kMaxGroup = 256;
}  // namespace

bool SubmitService::JoinsGroups(const store::SubmitRequest& req) {
  return !req.idempotency_key && req.spec.after.empty() && req.spec.after_any.empty();
}

StatusOr<Submitted> SubmitService::Submit(const store::Principal& who,
                                          store::SubmitRequest req) const {
  if (!JoinsGroups(req)) return SubmitAlone(who, std::move(req));
  Waiting me{&who, std::move(req), std::nullopt, {}};
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(&me);
  while (!me.out) {
    if (leading_) {
      me.wake.wait(lock);
      continue;
    }
    // Lead until this request is answered: the group ahead of it, if any, then its own.
    leading_ = true;
    while (!me.out && !queue_.empty()) {
      std::vector<Waiting*> group;
      while (!queue_.empty() && group.size() < kMaxGroup) {
        group.push_back(queue_.front());
        queue_.pop_front();
      }
      lock.unlock();
      std::vector<StatusOr<Submitted>> answers;
      try {
        answers = RunGroup(group);
      } catch (const std::exception& e) {
        // Never leave the queue without a leader or a request without an answer.
        answers.assign(group.size(), Internal(std::string("submit failed: ") + e.what()));
      } catch (...) {
        answers.assign(group.size(), Internal("submit failed"));
      }
      lock.lock();
      for (std::size_t i = 0; i < group.size(); ++i) {
        group[i]->out = std::move(answers[i]);
        if (group[i] != &me) group[i]->wake.notify_one();
      }
    }
    leading_ = false;
    // The request now first in the queue, if any, finds no leader and leads.
    if (!queue_.empty()) queue_.front()->wake.notify_one();
  }
  return std::move(*me.out);
}

int SubmitService::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(queue_.size());
}

std::vector<StatusOr<Submitted>> SubmitService::RunGroup(const std::vector<Waiting*>& group) const {
  std::vector<StatusOr<Submitted>> out;
  if (group.size() == 1) {
    out.push_back(SubmitAlone(*group[0]->who, std::move(group[0]->req)));
    return out;
  }
  std::vector<store::SubmitRequest> reqs;
  reqs.reserve(group.size());
  for (Waiting* w : group) reqs.push_back(std::move(w->req));
  auto admitted = AdmitEach(reqs, true);
  if (!admitted.ok()) return std::vector<StatusOr<Submitted>>(group.size(), admitted.status());
  Admission& a = *admitted;
  out.assign(group.size(), Internal("submit not answered"));
  // Budgets, one read per team, before anything is stored (as SubmitAlone reads it).
  std::map<std::string, std::optional<store::BudgetStatus>> budgets;
  // The admitted requests by submitter: one INSERT each.
  std::map<std::pair<model::TeamId, model::UserId>, std::vector<std::size_t>> by_submitter;
  for (std::size_t i = 0; i < group.size(); ++i) {
    if (a.steps[i] >= 0) {
      out[i] = a.refusals[i];
      continue;
    }
    const store::Principal& who = *group[i]->who;
    if (!budgets.count(who.team)) {
      auto st = store_.GetBudgetStatus(who.team, std::nullopt);
      budgets[who.team] = st.ok() ? std::optional<store::BudgetStatus>(*st) : std::nullopt;
    }
    by_submitter[{who.team_id, who.user_id}].push_back(i);
  }
  bool created = false;
  for (const auto& [submitter, items] : by_submitter) {
    const store::Principal& who = *group[items.front()]->who;
    try {
      // A submitter with one request here takes Submit's own single statement.
      std::vector<StatusOr<store::SubmitResult>> results;
      if (items.size() == 1) {
        results.push_back(store_.Submit(who, reqs[items.front()]));
      } else {
        std::vector<store::SubmitRequest> part;
        for (std::size_t i : items) part.push_back(reqs[i]);
        auto stored = store_.SubmitMany(who, part);
        const StatusCode code = stored.status().code();
        for (std::size_t k = 0; k < items.size(); ++k) {
          if (stored.ok()) {
            results.push_back((*stored)[k]);
          } else if (code == StatusCode::kInvalidArgument ||
                     code == StatusCode::kFailedPrecondition || code == StatusCode::kConflict) {
            // Refused for something in a request, with nothing written: each request
            // alone, for its own answer.
            results.push_back(store_.Submit(who, reqs[items[k]]));
          } else {
            // Unavailable, a failed commit, ...: the rows may be stored, so none is
            // submitted again (as Submit never retries a lost connection).
            results.push_back(stored.status());
          }
        }
      }
      for (std::size_t k = 0; k < items.size(); ++k) {
        const std::size_t i = items[k];
        if (!results[k].ok()) {
          out[i] = results[k].status();
          continue;
        }
        Submitted s;
        s.admitted_at = a.quotes.now;
        s.quote = std::move(a.quotes.quotes[i]);
        s.budget = budgets[who.team];
        s.result = *std::move(results[k]);
        if (s.result.created) {
          created = true;
          LogSubmitted(s.result.job);
        }
        out[i] = std::move(s);
      }
    } catch (const std::exception& e) {
      for (std::size_t i : items) out[i] = Internal(std::string("submit failed: ") + e.what());
    }
  }
  if (created) kick_();
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
