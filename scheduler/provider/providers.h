// Several capacity providers behind the engine's one: each sees the whole snapshot and plan
// and acts only on the pools it manages (the local provider's and the exec provider's pools
// are disjoint; main refuses a pool named by both).
#pragma once

#include <vector>

#include "scheduler/engine/capacity_provider.h"

namespace frugal::provider {

class Providers final : public engine::CapacityProvider {
 public:
  void Add(engine::CapacityProvider* p) {
    if (p) providers_.push_back(p);
  }
  bool empty() const { return providers_.empty(); }
  void Annotate(model::Snapshot& snapshot) override {
    for (auto* p : providers_) p->Annotate(snapshot);
  }
  void Apply(const model::Plan& plan, const model::Snapshot& snapshot) override {
    for (auto* p : providers_) p->Apply(plan, snapshot);
  }

 private:
  std::vector<engine::CapacityProvider*> providers_;
};

}  // namespace frugal::provider
