// The admission filter that quotas (quota.h) and hard budgets (budget.h) both put a plan
// through after the policy decided it: each limit is a "book" (what is held, what an admitted
// job takes) plus a few callbacks, and this one loop admits or refuses assignments against
// it and words the reasons. Pure.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "scheduler/model/snapshot.h"

namespace frugal::policy {

// What a job asks of a book: GPUs for quotas, expected micro-dollars for budgets.
using Amount = std::int64_t;

// One limit, as callbacks over its book. All four are required.
struct AdmissionRules {
  // What one assignment part adds to its job's ask; a gang's parts are summed.
  std::function<Amount(const model::Assignment& part)> part_amount;
  // Empty if `job` may take `amount` on `pool` now; otherwise the reason, without "waiting: ".
  std::function<std::string(const model::PendingJob& job, const model::Pool& pool,
                            Amount amount)>
      holding;
  // Records an admitted job in the book, so later jobs in the plan see it.
  std::function<void(const model::PendingJob& job, const model::Pool& pool, Amount amount)> take;
  // For jobs the policy left waiting: what `job` would ask on `pool`, or nullopt when the
  // pool is not one to cite for it (does not fit, not governed by this limit, or the job
  // waits for something else entirely).
  std::function<std::optional<Amount>(const model::PendingJob& job, const model::Pool& pool)>
      ask_on;
};

// In plan order, admits or refuses each job's assignments (a gang's parts, which share a
// job id, together): an admitted job is taken from the book and kept; a refused one is
// dropped and waits with "waiting: <holding reason>". Assignments of jobs or nodes the
// snapshot does not know are kept as they are. Then each job the policy left waiting that
// has no pool open to it (by ask_on) but is held on some, gets the reason of the pool where
// it asks least (the first such pool on a tie).
void EnforceAdmission(const model::Snapshot& snapshot, model::Plan& plan,
                      const AdmissionRules& rules);

// Whether `job` could start now as far as its dependencies go (none unfinished or failed).
bool Ready(const model::PendingJob& job);

// Node requests, after EnforceAdmission took the admitted jobs from the book (decision 0016):
// a new node is there for the jobs it was asked for, so each job a request names is judged
// and taken from the book as if admitted, in request order, asking what ask_on says (a job
// ask_on does not govern there is not this limit's to judge). A refused job comes off the
// request, the request shrinks by its GPUs (and goes when none are left), a note naming the
// jobs and `held_by` ("their team's quota") is added to its reason, and the job waits with
// the limit's reason. A request that names no jobs goes only when every ready, unplaced job
// that ask_on governs on its pool is held there.
void HoldNodeRequests(const model::Snapshot& snapshot, model::Plan& plan,
                      const AdmissionRules& rules, const std::string& held_by);

}  // namespace frugal::policy
