// The `exec` provider's configuration (issue 18, decision 0029): pools whose nodes are cloud
// instances that admin-supplied commands create, destroy and list (the Slurm power_save
// pattern). The command contract is in docs/providers.md; the reconciling is in
// scheduler/provider/exec_provider.h.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace YAML {
class Node;
}

namespace frugal::config {

struct ExecPoolSpec {
  std::string pool;   // must exist (frugal admin pool set): kind, GPU type, price, idle_timeout
  int node_gpus = 1;  // GPUs of one instance
  int max_nodes = 1;  // instances that exist at once (creating, booting, running, destroying)
  // Each command is a program and its leading arguments (YAML: a string split on spaces, or
  // a list); the provider appends the contract's arguments:
  std::vector<std::string> create;   // + POOL NODE: prints the instance id; exit 75 = no capacity
  std::vector<std::string> destroy;  // + INSTANCE_ID: exit 0 once gone or going
  std::vector<std::string> list;     // + POOL: "INSTANCE_ID NODE" per instance that exists
  std::string worker_url;  // what instances use to reach the scheduler; empty: its listen URL
  std::map<std::string, std::string> env;  // extra variables for the commands
  std::string checkpoint_root;  // shared storage the instances mount (FRUGAL_CHECKPOINT_ROOT)
  Seconds command_timeout{120};  // a command running longer is killed and counts as failed
  Seconds boot_timeout{600};     // created but not registered by then: destroyed, pool backs off
  Seconds leak_grace{300};       // listed but owned by no row: destroyed after this
  Seconds stockout_backoff{600};  // after a stockout or failed create, not asked for this long
  Seconds list_interval{30};     // how often `list` runs
  int max_concurrent_creates = 4;
};

// Parses the `exec_pools:` sequence; errors name the entry and key. Command paths must be
// absolute or relative to the working directory the scheduler starts in.
StatusOr<std::vector<ExecPoolSpec>> ParseExecPools(const YAML::Node& node);

}  // namespace frugal::config
