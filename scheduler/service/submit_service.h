// Submit admission and storage (issue 16, decision 0043): what every submit route runs
// between decoding a request and encoding the reply. The routes decode, call one method
// here, and encode; the rules live here and in the pure policy code they call.
//
// Admission, in order, on one reading of the guardrail settings and one of the pools, at
// the database's now() of that reading (the clock the engine decides by):
//  0. a deadline must leave room for the estimate: FailedPrecondition, field deadline,
//     naming the earliest feasible deadline;
//  1. the guardrails: the priority class's max_runtime default and maximum
//     (FailedPrecondition, field max_runtime_seconds, above it) and the approval hold for big
//     premium requests (policy/guardrails.h);
//  2. a quote against the pools as they are (Advisor::QuoteAll);
//  3. unless a dry run: FailedPrecondition, field gpus, when no node of any pool the job
//     may use can hold it; field deadline, naming the earliest feasible finish, when no
//     safe pool meets its deadline.
// Then the store (one transaction) and, when something new was stored, a kick for a cycle.
//
// Single submits that arrive together are admitted and stored together (decision 0047):
// while one thread runs a group, the requests that come in queue up, and the next thread
// to lead takes them all as one group: one reading of the pools and settings, one budget
// read per team, one INSERT per submitter. Each request still gets its own answer: a
// refusal refuses only its request, and if the group's INSERT fails, each request is
// stored alone, as if it had come alone. Requests with an idempotency key or dependencies
// always go alone. A request waits at most for the group ahead of it and its own.
//
// Threading: thread-safe (the store and the advisor are; the kick must be). Errors: the
// admission refusals above, and the store's (NotFound, Conflict, Unavailable).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "common/status.h"
#include "scheduler/policy/placement/quote.h"
#include "scheduler/service/advisor.h"
#include "scheduler/store/job_store.h"

namespace frugal::service {

struct Submitted {
  store::SubmitResult result;
  Timestamp admitted_at{};  // the database's time admission ran at
  policy::Quote quote;  // as admitted: the expected cost for the reply
  // The team's budget as it stood before the job was stored (so the job is not counted in
  // what is left); empty when the team has none or it could not be read (best effort).
  std::optional<store::BudgetStatus> budget;
};

struct BatchSubmitted {
  std::vector<store::BatchItem> items;  // in request order
  Micros expected_cost = 0;  // the jobs' expected cost on their recommended pools, summed
};

struct ArraySubmitted {
  store::ArrayResult result;
  policy::Quote quote;  // of one task
};

class SubmitService {
 public:
  // `kick` asks the engine for a cycle (Engine::Kick); all three must outlive the service.
  SubmitService(store::JobStore& store, const Advisor& advisor, std::function<void()> kick)
      : store_(store), advisor_(advisor), kick_(std::move(kick)) {}

  // Admits `reqs` in place (the guardrails may set max_runtime and an approval hold) and
  // returns one quote per request. `check` false: a dry run, quoted but never refused by
  // step 3. On a refusal, `*refused` (when given) is the index of the request refused.
  StatusOr<Quotes> Admit(std::vector<store::SubmitRequest>& reqs, bool check,
                         std::size_t* refused = nullptr) const;

  // Whether Submit takes `req` in a group with others (no idempotency key, no
  // dependencies). Grouped submits use at most one database connection in all, whichever
  // thread leads the group.
  static bool JoinsGroups(const store::SubmitRequest& req);
  // POST /v1/jobs: admits and stores one job.
  StatusOr<Submitted> Submit(const store::Principal& who, store::SubmitRequest req) const;
  // POST /v1/jobs?dry_run=true: the admitted request (`req` is updated in place) and its
  // quote; nothing is stored. `result.job` is left empty: `admitted_at` and `quote` are set.
  StatusOr<Submitted> DryRun(store::SubmitRequest& req) const;
  // POST /v1/jobs:batch (decision 0024): every request admitted, then all stored in one
  // transaction, or none. `*refused` as Admit; untouched when the store refuses.
  StatusOr<BatchSubmitted> SubmitBatch(const store::Principal& who,
                                       std::vector<store::SubmitRequest> reqs,
                                       std::size_t* refused) const;
  // POST /v1/arrays (decision 0026): the task spec admitted once, then the array stored.
  StatusOr<ArraySubmitted> SubmitArray(const store::Principal& who, store::ArrayRequest req) const;

  // Single submits queued for the next group now (for tests and metrics).
  int waiting() const;

 private:
  struct Waiting;
  // Per request: Ok, or the admission refusal and the step (0-3) that refused it.
  struct Admission {
    std::vector<Status> refusals;
    std::vector<int> steps;
    Quotes quotes;  // one per request (empty quotes for refused ones)
  };
  StatusOr<Admission> AdmitEach(std::vector<store::SubmitRequest>& reqs, bool check) const;
  StatusOr<Submitted> SubmitAlone(const store::Principal& who, store::SubmitRequest req) const;
  std::vector<StatusOr<Submitted>> RunGroup(const std::vector<Waiting*>& group) const;

  store::JobStore& store_;
  const Advisor& advisor_;
  const std::function<void()> kick_;
  mutable std::mutex mu_;
  mutable std::deque<Waiting*> queue_;  // guarded by mu_
  mutable bool leading_ = false;        // guarded by mu_: a thread is running groups
};

// The submit-time checks of step 3 against a quote already made.
Status CheckQuote(const model::JobSpec& spec, const policy::Quote& quote);
// Step 0: a deadline that `now` plus the estimate has already passed cannot be met.
Status CheckDeadline(const model::JobSpec& spec, Timestamp now);

}  // namespace frugal::service
