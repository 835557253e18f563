// Typed configuration of frugal-worker. Precedence, lowest first: defaults, the YAML file
// (--config), the environment (FRUGAL_WORKER_TOKEN, so the token stays off the command
// line), command-line flags, then what nvidia-smi detects for GPU settings left unset.
// Unknown YAML keys are errors that name the key, so a typo never silently does nothing.
//
// Threading: plain values and pure functions.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "worker/gpu_probe.h"

namespace frugal::worker {

struct WorkerConfig {
  std::string scheduler_url;  // required, e.g. http://scheduler:8080 (or a,b: failover)
  std::string token;          // worker-role token; never logged
  std::string pool;           // required: the pool this node's capacity belongs to
  std::string node;           // default: the host name
  // Where other nodes reach this one: a multi-node gang whose rank 0 runs here gives it to
  // the other parts as MASTER_ADDR. Default: the host name; set it where that does not
  // resolve from the other nodes (an IP address, a cluster-internal name).
  std::string advertise_address;
  int gpus = 0;               // 0: detect with nvidia-smi
  std::string gpu_type;       // empty: detect ("a100"); set it to match the pool's naming
  int gpu_mem_gb = 0;         // 0: detect
  std::optional<Seconds> heartbeat_interval;  // unset: what registration answers
  std::string work_dir;         // attempt directories and logs; default ./.frugal-worker/<node>
  std::string checkpoint_root;  // FRUGAL_CHECKPOINT_DIR = <root>/<job id>; should be shared
                                // storage; default ./.frugal-worker/checkpoints
  Seconds grace_period{10};     // SIGTERM -> SIGKILL
  std::string notice_file;      // a spot notice when this path exists
  std::string notice_url;       // cloud metadata URL polled for a notice
  std::string notice_format = "aws";  // aws | gcp: how to read notice_url's answer
  std::string log_level = "info";
  // The GPU metrics source: run as `<nvidia_smi> --query-gpu=... --format=csv,noheader,nounits`
  // for detection and for every heartbeat's utilisation and memory readings.
  std::string nvidia_smi = "nvidia-smi";
  // Job isolation (worker/job_identity.h). Unset, for a worker running as root: jobs run with
  // the group of user "frugal-job" and each attempt under its own uid of kDefaultJobUids.
  // job_uids "none": every job runs as job_user itself. A worker not running as root runs
  // jobs as itself and accepts neither.
  std::string job_user;
  std::optional<std::string> job_uids;
  // Names of the worker's environment variables a job inherits; nothing else leaks through.
  std::vector<std::string> pass_env = {"PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ"};
};

// A uid block no distribution or systemd hands out (they stay far below it).
inline constexpr const char* kDefaultJobUids = "2000000000-2000004095";
inline constexpr const char* kDefaultJobUser = "frugal-job";

using EnvLookup = std::function<std::optional<std::string>(const std::string&)>;

// The process environment.
std::optional<std::string> ProcessEnv(const std::string& name);

// The YAML keys, in the order the help text lists them.
const std::vector<std::string>& WorkerConfigKeys();

// Applies one key (as named in YAML) from text; used by the file, env and flag layers.
// InvalidArgument with field = key for a bad value or an unknown key.
Status SetKey(WorkerConfig& c, const std::string& key, const std::string& value);

// Defaults, then `yaml_path` (if not empty), then the environment through `env`.
StatusOr<WorkerConfig> LoadWorkerConfig(const std::string& yaml_path, const EnvLookup& env);

// Fills what is still unset: node and advertise_address from `hostname`, GPU settings from
// `detected` (empty when nvidia-smi is absent), directories; makes directories absolute (jobs
// run elsewhere) and checks that everything required is there. InvalidArgument naming the
// missing setting (advertise_address: a host name no other node could dial).
Status CompleteWorkerConfig(WorkerConfig& c, const std::string& hostname,
                            const std::vector<GpuReading>& detected);

}  // namespace frugal::worker
