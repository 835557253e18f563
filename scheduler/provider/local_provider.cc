#include "scheduler/provider/local_provider.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <fstream>

namespace frugal::provider {

namespace fs = std::filesystem;

StatusOr<std::unique_ptr<LocalProvider>> LocalProvider::Create(LocalProviderOptions options) {
  std::unique_ptr<LocalProvider> p(new LocalProvider(std::move(options)));
  for (const auto& spec : p->options_.pools) {
    PoolState pool;
    pool.spec = spec;
    const auto& pre = spec.preemption;
    if (pre.kind == config::PreemptionSpec::Kind::kRate) {
      pool.rate.emplace(pre.rate_per_node_hour, pre.seed);
    } else if (pre.kind == config::PreemptionSpec::Kind::kTrace) {
      auto trace = TraceAvailability::Load(pre.trace, pre.zone);
      if (!trace.ok())
        return Status(trace.status().code(),
                      "local_workers pool " + spec.pool + ": " + trace.status().message());
      pool.trace.emplace(std::move(*trace));
    }
    for (int i = 0; i < spec.max_nodes; ++i) {
      Slot s;
      s.base_name = spec.pool + "-" + std::to_string(i + 1);
      s.wanted = i < spec.nodes;
      pool.slots.push_back(std::move(s));
    }
    p->pools_.push_back(std::move(pool));
  }
  return p;
}

LocalProvider::~LocalProvider() { Stop(); }

void LocalProvider::Start(std::string scheduler_url, std::string worker_token) {
  options_.scheduler_url = std::move(scheduler_url);
  options_.worker_token = std::move(worker_token);
  started_ = Clock::now();
  thread_ = std::thread([this] { Loop(); });
}

void LocalProvider::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void LocalProvider::Loop() {
  while (!stop_) {
    const auto now = Clock::now();
    const double elapsed = std::chrono::duration<double>(now - started_).count();
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& pool : pools_) Tick(pool, now, elapsed);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  std::lock_guard<std::mutex> lock(mu_);
  Shutdown();
}

void LocalProvider::Tick(PoolState& pool, Clock::time_point now, double elapsed_s) {
  int alive = 0;
  for (auto& slot : pool.slots) {
    if (!slot.pid) continue;
    if (!slot.wanted && !slot.stop_sent) {
      // Released by the policy: the worker drains (its jobs are done) and exits.
      runner_.SignalGroup(*slot.pid, SIGTERM);
      slot.stop_sent = true;
      spdlog::info(R"("event":"local_node_released","node":"{}","pool":"{}")", slot.node,
                   pool.spec.pool);
    }
    if (!runner_.Reap(*slot.pid).running) {
      if (slot.noticed_at) {
        spdlog::info(R"("event":"local_node_reclaimed","node":"{}","pool":"{}")", slot.node,
                     pool.spec.pool);
        slot.reclaimed = true;
      } else {
        // E.g. its pool does not exist yet: the worker refuses to start; try again later.
        spdlog::warn(R"("event":"local_node_exited","node":"{}","pool":"{}")", slot.node,
                     pool.spec.pool);
      }
      slot.pid.reset();
      slot.noticed_at.reset();
      slot.down_until = now + pool.spec.restart_delay;
      continue;
    }
    if (slot.noticed_at) {
      // The reclaimed instance goes away once its jobs had their grace period.
      if (now - *slot.noticed_at > pool.spec.grace + std::chrono::seconds(2)) {
        runner_.SignalGroup(*slot.pid, SIGTERM);
        slot.noticed_at = now + std::chrono::hours(24);  // signal once; reaped above later
      }
      continue;
    }
    ++alive;
  }

  int wanted = 0;
  for (const auto& slot : pool.slots) wanted += slot.wanted;
  int allowed = wanted;
  std::string why;
  if (pool.trace) {
    const double t = pool.spec.preemption.start_s + elapsed_s * pool.spec.preemption.speedup;
    allowed = pool.trace->Allowed(t, allowed);
    why = "trace " + fs::path(pool.spec.preemption.trace).filename().string() + " zone " +
          pool.spec.preemption.zone + " at t=" + std::to_string(static_cast<long>(t)) + "s";
  }
  int to_notice = std::max(0, alive - allowed);
  if (pool.rate) {
    to_notice = std::max(to_notice, pool.rate->Due(elapsed_s, alive));
    if (why.empty()) why = "rate " + std::to_string(pool.spec.preemption.rate_per_node_hour) +
                           "/node-hour";
  }
  // Reclaim from the highest-numbered node down, so which node goes is predictable.
  for (auto it = pool.slots.rbegin(); it != pool.slots.rend() && to_notice > 0; ++it) {
    if (it->pid && !it->noticed_at) {
      GiveNotice(pool, *it, why, now);
      --to_notice;
      --alive;
    }
  }
  for (auto& slot : pool.slots) {
    if (slot.pid || !slot.wanted || now < slot.down_until || alive >= allowed) continue;
    StartNode(pool, slot);
    if (slot.pid) ++alive;
  }
}

void LocalProvider::StartNode(PoolState& pool, Slot& slot) {
  // A reclaimed spot node never comes back: its replacement is a new instance, a new name.
  if (slot.generation == 0 || slot.reclaimed) ++slot.generation;
  slot.reclaimed = false;
  slot.node = slot.generation == 1 ? slot.base_name
                                   : slot.base_name + "-g" + std::to_string(slot.generation);
  const fs::path dir = fs::path(options_.dir) / slot.node;
  std::error_code ec;
  fs::create_directories(dir / "work", ec);
  fs::remove(dir / "notice", ec);
  const auto& s = pool.spec;
  worker::SpawnSpec spawn;
  spawn.argv = {options_.worker_bin, "--url", options_.scheduler_url, "--pool", s.pool,
                "--node", slot.node, "--gpus", std::to_string(s.gpus_per_node),
                "--gpu-type", s.gpu_type, "--gpu-mem-gb", std::to_string(s.gpu_mem_gb),
                "--work-dir", (dir / "work").string(), "--checkpoint-root",
                options_.checkpoint_root, "--grace", FormatDuration(s.grace), "--notice-file",
                (dir / "notice").string(),
                // Every local node is this machine: a gang's parts meet on loopback, which
                // works even where the host name does not resolve.
                "--advertise-address", "127.0.0.1"};
  spawn.env = worker::MergeEnvironment(worker::CurrentEnvironment(), {"FRUGAL_TOKEN"}, {},
                                       {{"FRUGAL_WORKER_TOKEN", options_.worker_token}});
  spawn.cwd = dir.string();
  spawn.output_path = (dir / "worker.log").string();
  auto pid = runner_.Start(spawn);
  if (!pid.ok()) {
    spdlog::error(R"("event":"local_node_start_failed","node":"{}","error":"{}")", slot.node,
                  pid.status().message());
    slot.down_until = Clock::now() + s.restart_delay;
    return;
  }
  slot.pid = *pid;
  spdlog::info(R"("event":"local_node_started","node":"{}","pool":"{}","gpus":{},"pid":{})",
               slot.node, s.pool, s.gpus_per_node, *pid);
}

void LocalProvider::GiveNotice(PoolState& pool, Slot& slot, const std::string& why,
                               Clock::time_point now) {
  const fs::path notice = fs::path(options_.dir) / slot.node / "notice";
  std::ofstream(notice) << "spot interruption by the local provider: " << why << "\n";
  slot.noticed_at = now;
  slot.down_until = now + pool.spec.restart_delay;
  spdlog::info(R"("event":"local_node_preempted","node":"{}","pool":"{}","source":"{}")",
               slot.node, pool.spec.pool, why);
}

void LocalProvider::Annotate(model::Snapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& p : snapshot.pools) {
    for (const auto& pool : pools_) {
      if (pool.spec.pool != p.name || pool.spec.max_nodes <= pool.spec.nodes) continue;
      p.elastic = true;
      p.node_gpus = pool.spec.gpus_per_node;
      // Wanted nodes that have not registered yet are on their way.
      int starting = 0;
      for (const auto& slot : pool.slots) {
        if (!slot.wanted) continue;
        bool live = false;
        for (const auto& n : snapshot.nodes) live = live || (slot.pid && n.name == slot.node);
        if (!live) ++starting;
      }
      p.requested_gpus = starting * pool.spec.gpus_per_node;
    }
  }
}

void LocalProvider::Apply(const model::Plan& plan, const model::Snapshot& snapshot) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& req : plan.node_requests) {
    std::string name;
    for (const auto& p : snapshot.pools)
      if (p.id == req.pool_id) name = p.name;
    for (auto& pool : pools_) {
      if (pool.spec.pool != name) continue;
      int nodes = (req.gpus + pool.spec.gpus_per_node - 1) / pool.spec.gpus_per_node;
      for (auto& slot : pool.slots) {
        if (nodes <= 0) break;
        if (slot.wanted || slot.pid) continue;
        slot.wanted = true;
        slot.stop_sent = false;
        --nodes;
        spdlog::info(R"("event":"local_node_requested","pool":"{}","slot":"{}","reason":"{}")",
                     name, slot.base_name, req.reason);
      }
    }
  }
  for (const auto& rel : plan.node_releases) {
    std::string node;
    for (const auto& n : snapshot.nodes)
      if (n.id == rel.node_id) node = n.name;
    for (auto& pool : pools_)
      for (auto& slot : pool.slots)
        if (slot.pid && slot.node == node) slot.wanted = false;
  }
}

void LocalProvider::Shutdown() {
  Clock::duration grace{};
  for (auto& pool : pools_) {
    grace = std::max<Clock::duration>(grace, pool.spec.grace);
    for (auto& slot : pool.slots)
      if (slot.pid) runner_.SignalGroup(*slot.pid, SIGTERM);
  }
  // Workers stop their jobs (grace) and then report; give them a little longer.
  const auto deadline = Clock::now() + grace + std::chrono::seconds(10);
  for (;;) {
    bool any = false;
    for (auto& pool : pools_)
      for (auto& slot : pool.slots)
        if (slot.pid) {
          if (runner_.Reap(*slot.pid).running) any = true;
          else slot.pid.reset();
        }
    if (!any) return;
    if (Clock::now() > deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (auto& pool : pools_)
    for (auto& slot : pool.slots)
      if (slot.pid) {
        runner_.SignalGroup(*slot.pid, SIGKILL);
        runner_.Reap(*slot.pid);
      }
}

}  // namespace frugal::provider
