// What the engine asks of whoever creates and destroys nodes (the local provider today; an
// `exec` or Kubernetes provider later). Before Decide it tells the snapshot which pools can
// grow and what is already on its way; after the plan is applied it acts on the plan's node
// requests and releases. Called on the engine thread only; implementations must be
// thread-safe against their own threads.
#pragma once

#include "scheduler/model/snapshot.h"

namespace frugal::engine {

class CapacityProvider {
 public:
  virtual ~CapacityProvider() = default;
  // Sets elastic, node_gpus and requested_gpus on the pools this provider manages.
  virtual void Annotate(model::Snapshot& snapshot) = 0;
  // Starts nodes for plan.node_requests and stops the nodes of plan.node_releases.
  virtual void Apply(const model::Plan& plan, const model::Snapshot& snapshot) = 0;
};

}  // namespace frugal::engine
