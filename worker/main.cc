// frugal-worker: the agent on each GPU node. This file is the wiring diagram:
// flags + YAML + env -> config -> GPU detection -> client, process runner, notice watcher
// -> agent loop. SIGINT/SIGTERM stop the jobs gracefully (reported preempted) and exit 0;
// SIGUSR1 is a spot interruption notice.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <map>

#include "api/client.h"
#include "common/log.h"
#include "worker/agent.h"
#include "worker/dispatch_waiter.h"
#include "worker/gpu_probe.h"
#include "worker/notice_watcher.h"
#include "worker/process_runner.h"
#include "worker/waker.h"
#include "worker/worker_config.h"

namespace {

using frugal::worker::Millis;

volatile std::sig_atomic_t g_stop = 0;

void OnStopSignal(int) { g_stop = 1; }

// The worker only compares its own times (lease deadline, grace periods, polling), so a
// steady clock is right: a wall-clock step must neither kill healthy jobs nor stretch a
// lease. (Its values never leave the process.)
class MonotonicClock final : public frugal::Clock {
 public:
  frugal::Timestamp Now() const override {
    return frugal::Timestamp(std::chrono::duration_cast<frugal::Timestamp::duration>(
        std::chrono::steady_clock::now().time_since_epoch()));
  }
};

struct Flag {
  const char* name;
  const char* key;  // as in the YAML file
  const char* help;
};

const Flag kFlags[] = {
    {"--url", "scheduler_url", "Scheduler URL, e.g. http://scheduler:8080; several, comma-separated, fail over"},
    {"--token", "token", "Worker token (better: FRUGAL_WORKER_TOKEN; flags show in ps)"},
    {"--pool", "pool", "Pool this node belongs to"},
    {"--node", "node", "Node name (default: the host name)"},
    {"--advertise-address", "advertise_address",
     "Host name or IP other nodes reach this one at, for multi-node jobs (default: the host name)"},
    {"--gpus", "gpus", "Number of GPUs (default: detected by nvidia-smi)"},
    {"--gpu-type", "gpu_type", "GPU type as the pool names it (default: detected)"},
    {"--gpu-mem-gb", "gpu_mem_gb", "GPU memory in GB (default: detected)"},
    {"--heartbeat-interval", "heartbeat_interval", "Heartbeat period (default: the scheduler's)"},
    {"--work-dir", "work_dir", "Attempt directories and logs (default ./.frugal-worker/NODE)"},
    {"--checkpoint-root", "checkpoint_root", "Checkpoints go to ROOT/JOB_ID (shared storage)"},
    {"--grace", "grace_period", "Time between SIGTERM and SIGKILL when stopping a job (10s)"},
    {"--notice-file", "notice_file", "A spot interruption notice when this file exists"},
    {"--notice-url", "notice_url", "Cloud metadata URL to poll for an interruption notice"},
    {"--notice-format", "notice_format", "How to read --notice-url: aws or gcp"},
    {"--log-level", "log_level", "trace, debug, info, warn, error or off"},
    {"--nvidia-smi", "nvidia_smi", "GPU metrics command or path (default nvidia-smi)"},
    {"--job-user", "job_user", "As root: jobs run with this user's group (default frugal-job)"},
    {"--job-uids", "job_uids", "As root: FIRST-LAST, a uid per attempt (none: job_user's own)"},
    {"--pass-env", "pass_env", "Worker variables jobs inherit (default PATH,LANG,LC_ALL,LC_CTYPE,TZ)"},
};

int Fail(const frugal::Status& st, int code) {
  std::fprintf(stderr, "frugal-worker: %s\n", st.message().c_str());
  return code;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "";
  return name;
}

void InstallSignalHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a scheduler hanging up mid-request is an error value, not death
  frugal::worker::NoticeWatcher::InstallSignalHandler();
}

frugal::worker::AgentOptions AgentOptionsFrom(const frugal::worker::WorkerConfig& c) {
  frugal::worker::AgentOptions o;
  o.node = c.node;
  o.address = c.advertise_address;
  o.pool = c.pool;
  o.gpus = c.gpus;
  o.gpu_type = c.gpu_type;
  o.gpu_mem_gb = c.gpu_mem_gb;
  if (c.heartbeat_interval) o.heartbeat_interval = Millis(*c.heartbeat_interval);
  o.work_dir = c.work_dir;
  o.checkpoint_root = c.checkpoint_root;
  o.grace = Millis(c.grace_period);
  o.join_token = c.token;
  for (const std::string& entry : frugal::worker::CurrentEnvironment()) {
    const std::string name = entry.substr(0, entry.find('='));
    for (const std::string& pass : c.pass_env) {
      if (name == pass) o.base_env.push_back(entry);
    }
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"frugal-worker: runs Frugal jobs on this GPU node"};
  std::string config_path;
  std::map<std::string, std::string> values;
  app.add_option("--config", config_path, "YAML file with the settings below (flags win)");
  for (const Flag& f : kFlags) app.add_option(f.name, values[f.key], f.help);
  bool noop = false;
  app.add_flag("--noop", noop,
               "Run nothing: report every job succeeded as soon as it is assigned (benchmarks "
               "of the scheduler and the protocol; never on a node that should run jobs)");
  CLI11_PARSE(app, argc, argv);

  auto config = frugal::worker::LoadWorkerConfig(config_path, frugal::worker::ProcessEnv);
  if (!config.ok()) return Fail(config.status(), 2);
  frugal::worker::WorkerConfig& cfg = *config;
  for (const Flag& f : kFlags) {
    if (app.count(f.name) == 0) continue;
    if (auto st = frugal::worker::SetKey(cfg, f.key, values[f.key]); !st.ok()) return Fail(st, 2);
  }
  if (auto st = frugal::InitLogging(cfg.log_level); !st.ok()) return Fail(st, 2);

  auto probed = frugal::worker::ProbeGpus(cfg.nvidia_smi);
  std::vector<frugal::worker::GpuReading> detected;
  if (probed.ok()) {
    detected = *probed;
  } else if (probed.status().code() != frugal::StatusCode::kNotFound) {
    spdlog::warn(R"("event":"gpu_probe_failed","error":"{}")",
                 frugal::JsonEscape(probed.status().message()));
  }
  if (auto st = frugal::worker::CompleteWorkerConfig(cfg, HostName(), detected); !st.ok()) {
    return Fail(st, 2);
  }

  auto job_users = frugal::worker::JobUsers::Create(cfg.job_user, cfg.job_uids.value_or(""));
  if (!job_users.ok()) return Fail(job_users.status(), 2);
  // Nothing of this process is readable through /proc by a job of the same user (its
  // environment holds the join token). Jobs start under frugal-keeper, which holds none.
  prctl(PR_SET_DUMPABLE, 0);
  for (const std::string& dir : {cfg.work_dir, cfg.checkpoint_root}) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    chmod(dir.c_str(), 0711);  // jobs pass through to their own directories, list nothing
    if (auto st = job_users->CheckReachable(job_users->Sample(), dir);
        !st.ok()) {
      return Fail(st, 2);
    }
  }

  frugal::api::Client client(cfg.scheduler_url, cfg.token,
                             {std::chrono::seconds(2), frugal::worker::kKeepAliveGap});
  if (!client.url_status().ok()) return Fail(client.url_status(), 2);
  InstallSignalHandlers();
  MonotonicClock clock;
  // The loop sleeps on the waker: a job's exit, a dispatch or a no-op "job" ends the tick.
  frugal::worker::Waker waker;
  waker.NotifyOnChildExit();
  frugal::worker::PosixProcessRunner posix_runner;
  frugal::worker::NoopProcessRunner noop_runner([&waker] { waker.Notify(); });
  frugal::worker::ProcessRunner& runner =
      noop ? static_cast<frugal::worker::ProcessRunner&>(noop_runner) : posix_runner;
  if (!noop && access(posix_runner.keeper().c_str(), X_OK) != 0) {
    return Fail(frugal::FailedPrecondition("frugal-keeper is not at " + posix_runner.keeper() +
                                           ": install it beside frugal-worker"),
                2);
  }
  if (noop) {
    spdlog::warn(R"("event":"noop_mode","why":"--noop: jobs assigned here are reported succeeded without running")");
  }
  frugal::worker::NoticeWatcher notices({cfg.notice_file, cfg.notice_url, cfg.notice_format});
  if (!notices.url_status().ok()) return Fail(notices.url_status(), 2);
  const bool has_nvidia_smi = !detected.empty();
  auto gpu_stats = [has_nvidia_smi, program = cfg.nvidia_smi] {
    if (!has_nvidia_smi) return nlohmann::json::array();
    auto gpus = frugal::worker::ProbeGpus(program);
    return gpus.ok() ? frugal::worker::GpuStatsJson(*gpus) : nlohmann::json::array();
  };
  spdlog::info(
      R"("event":"worker_starting","node":"{}","pool":"{}","gpus":{},"gpu_type":"{}","work_dir":"{}","checkpoint_root":"{}")",
      frugal::JsonEscape(cfg.node), frugal::JsonEscape(cfg.pool), cfg.gpus,
      frugal::JsonEscape(cfg.gpu_type), frugal::JsonEscape(cfg.work_dir),
      frugal::JsonEscape(cfg.checkpoint_root));

  auto options = AgentOptionsFrom(cfg);
  options.job_users = *job_users;
  frugal::worker::Agent* agent_ptr = nullptr;
  frugal::worker::DispatchWaiter dispatch(cfg.scheduler_url, cfg.node,
                                          [&agent_ptr, &waker](const nlohmann::json& reply) {
                                            agent_ptr->Dispatch(reply);
                                            waker.Notify();
                                          });
  options.on_credential = [&dispatch](const std::string& c) { dispatch.SetCredential(c); };
  frugal::worker::Agent agent(std::move(options), client, runner, notices, clock, gpu_stats,
                              [&waker](Millis d) { waker.Wait(d); });
  agent_ptr = &agent;
  dispatch.Start();
  const auto st = agent.Run([] { return g_stop != 0; });
  dispatch.Stop();
  if (!st.ok()) return Fail(st, 1);
  return 0;
}
