// The port of the `exec` provider (issue 18, decision 0029): the cloud instances it made,
// one row each (migrations/0023_add_instances.sql). The rows are the provider's memory: a
// restarted or newly elected scheduler reads them and carries on, so an instance is never
// forgotten (a forgotten instance is a bill nobody sees). Every change is audited.
//
// Threading: implementations are thread-safe; each method is one transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/money.h"
#include "common/status.h"

namespace frugal::store {

enum class InstanceState { kCreating, kBooting, kRunning, kDestroying, kGone };
const char* ToString(InstanceState s);

struct Instance {
  std::int64_t id = 0;
  std::string pool;
  std::string node;         // the node name it was created for (its worker registers as it)
  std::string instance_id;  // the cloud's id; empty while `create` runs
  InstanceState state = InstanceState::kCreating;
  bool leaked = false;  // found by `list`, never created by Frugal
  int gpus = 0;
  Micros rate_micros_per_gpu_hour = 0;  // the pool's price when it was created
  Timestamp requested_at{};
  std::optional<Timestamp> created_at;  // `create` returned (or `list` first showed the leak)
  std::optional<Timestamp> registered_at;
  std::optional<Timestamp> ended_at;
  std::string reason;  // why it ended or is ending: idle, boot_timeout, leak, vanished, ...
  std::string detail;  // a failed command's last output
  // What it cost: F (the ledger's function) over [created_at, ended_at or now] at gpus x
  // rate; 0 when it was never created.
  Micros cost_micros = 0;
};

struct InstanceChange {
  InstanceState to = InstanceState::kGone;
  std::string instance_id;  // set with kBooting: what `create` printed
  std::string reason;       // stored; also names the audit action (instance.<reason>)
  std::string detail;
};

class InstanceStore {
 public:
  virtual ~InstanceStore() = default;

  // The instances not gone, oldest first; with `ended_since`, also those that ended since.
  virtual StatusOr<std::vector<Instance>> ListInstances(
      std::optional<Timestamp> ended_since = std::nullopt) = 0;

  // A new row for `node` in `pool` (NotFound: no such pool), priced at the pool's rate
  // now. Without `instance_id` it is kCreating: the provider is about to run `create`, and
  // `join_token_sha256` (if given) becomes a worker token bound to this node: it registers
  // `node` only, once (WorkerStore::RegisterWorker), and is revoked when the instance ends.
  // With an `instance_id` it is a leak that `list` showed (kDestroying, leaked, created
  // now). Conflict when an instance not gone already has the node name.
  virtual StatusOr<Instance> AddInstance(const std::string& pool, const std::string& node,
                                         int gpus, const std::string& instance_id,
                                         const std::string& join_token_sha256 = "") = 0;

  // Moves instance `id` to `change.to` if it is in one of `from` (compare-and-set: a
  // FailedPrecondition when another change came first), stamping created_at (kBooting),
  // registered_at (kRunning) or ended_at (kGone). Ending an instance also removes its node
  // when nothing runs there, as `frugal admin node remove` would.
  virtual StatusOr<Instance> ChangeInstance(std::int64_t id,
                                            const std::vector<InstanceState>& from,
                                            const InstanceChange& change) = 0;
};

}  // namespace frugal::store
