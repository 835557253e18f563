// placement/fifo: the baseline. Jobs in (priority class, submit order); each goes to the
// first live node, by id, with enough free GPUs of an allowed type. A job that does not
// fit does not block smaller jobs behind it (no reservations): the simplest useful policy
// and the yardstick the cost policy is measured against. It keeps the hard limits every
// policy keeps: a pool's max_gpus, no tolerance-none job on spot, no new work on a node
// under a reclaim notice.
#pragma once

#include "scheduler/policy/policy.h"

namespace frugal::policy {

class FifoPolicy final : public Policy {
 public:
  std::string Name() const override { return "placement/fifo"; }
  model::Plan Decide(const model::Snapshot& snapshot) const override;
};

// True if a node of this type and memory may run the job (type list and minimum memory).
bool NodeFits(const model::PendingJob& job, const model::Node& node);

}  // namespace frugal::policy
