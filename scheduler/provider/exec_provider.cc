#include "scheduler/provider/exec_provider.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "common/crypto.h"

namespace frugal::provider {

namespace {

using store::Instance;
using store::InstanceState;

// EX_TEMPFAIL (sysexits.h): the contract's "no capacity right now".
constexpr int kNoCapacity = 75;

std::string NodeName(const std::string& pool) {
  // Unguessable is not needed here (the node credential is the secret); unique is.
  return pool + "-" + NewSecretHex().substr(0, 10);
}

// The first non-empty line of `out`, trimmed; empty if none or if it has inner whitespace.
std::string FirstWord(const std::string& out) {
  size_t pos = 0;
  while (pos < out.size()) {
    size_t end = out.find('\n', pos);
    if (end == std::string::npos) end = out.size();
    std::string line = out.substr(pos, end - pos);
    pos = end + 1;
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) line.pop_back();
    size_t start = 0;
    while (start < line.size() && std::isspace(static_cast<unsigned char>(line[start]))) ++start;
    line = line.substr(start);
    if (line.empty()) continue;
    for (char c : line)
      if (std::isspace(static_cast<unsigned char>(c)) || c < 0x21 || c > 0x7e) return "";
    return line.size() <= 255 ? line : "";
  }
  return "";
}

const char* Capacity(model::CapacityKind k) {
  switch (k) {
    case model::CapacityKind::kReserved: return "reserved";
    case model::CapacityKind::kOnDemand: return "on_demand";
    case model::CapacityKind::kSpot: return "spot";
  }
  return "on_demand";
}

bool Active(const Instance& x) { return x.state != InstanceState::kGone; }

}  // namespace

ExecProvider::ExecProvider(ExecProviderOptions options, store::InstanceStore& store, CommandFn run)
    : options_(std::move(options)), store_(store), run_(run ? std::move(run) : RunCommand) {
  for (auto spec : options_.pools) {
    // Commands run in the pool's own directory: a relative path means the scheduler's.
    for (auto* cmd : {&spec.create, &spec.destroy, &spec.list})
      if (!cmd->empty() && (*cmd)[0].find('/') != std::string::npos)
        (*cmd)[0] = std::filesystem::absolute((*cmd)[0]).string();
    PoolRun run;
    run.spec = std::move(spec);
    pools_.push_back(std::move(run));
  }
}

ExecProvider::~ExecProvider() { Stop(); }

void ExecProvider::Start(std::string scheduler_url) {
  std::lock_guard<std::mutex> lock(mu_);
  scheduler_url_ = std::move(scheduler_url);
}

void ExecProvider::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  idle_.wait(lock, [this] { return threads_ == 0; });
}

void ExecProvider::Launch(std::function<void()> fn) {
  ++threads_;
  std::thread([this, fn = std::move(fn)] {
    fn();
    std::lock_guard<std::mutex> lock(mu_);
    if (--threads_ == 0) idle_.notify_all();
  }).detach();
}

ExecProvider::PoolRun* ExecProvider::Find(const std::string& pool) {
  for (auto& run : pools_)
    if (run.spec.pool == pool) return &run;
  return nullptr;
}

std::string ExecProvider::Cwd(const PoolRun& run) const {
  const auto dir = std::filesystem::path(options_.work_dir) / run.spec.pool;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return dir.string();
}

std::vector<std::string> ExecProvider::Env(
    const PoolRun& run, const std::vector<std::pair<std::string, std::string>>& vars) const {
  std::vector<std::string> env;
  for (const auto& name : options_.pass_env)
    if (const char* v = std::getenv(name.c_str())) env.push_back(name + "=" + v);
  for (const auto& [k, v] : run.spec.env) env.push_back(k + "=" + v);
  env.push_back("FRUGAL_POOL=" + run.spec.pool);
  for (const auto& [k, v] : vars) env.push_back(k + "=" + v);
  return env;
}

void ExecProvider::Annotate(model::Snapshot& snapshot) {
  auto rows = store_.ListInstances();
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  for (auto& p : snapshot.pools) {
    PoolRun* run = Find(p.name);
    if (!run) continue;
    // Growable unless it backs off after a stockout, a failed create or a boot timeout:
    // the policy then asks the next pool in cost order.
    p.elastic = now >= run->backoff_until;
    p.node_gpus = run->spec.node_gpus;
    const int cap = run->spec.max_nodes * run->spec.node_gpus;
    p.max_gpus = p.max_gpus > 0 ? std::min(p.max_gpus, cap) : cap;
    int starting = 0;
    if (rows.ok())
      for (const auto& x : *rows)
        if (x.pool == p.name &&
            (x.state == InstanceState::kCreating || x.state == InstanceState::kBooting))
          ++starting;
    p.requested_gpus = starting * run->spec.node_gpus;
  }
}

void ExecProvider::Apply(const model::Plan& plan, const model::Snapshot& snapshot) {
  auto rows = store_.ListInstances();
  if (!rows.ok()) {
    spdlog::warn(R"("event":"exec_provider_skipped","error":"{}")", rows.status().message());
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return;
  for (auto& run : pools_) {
    const model::Pool* pool = nullptr;
    for (const auto& p : snapshot.pools)
      if (p.name == run.spec.pool) pool = &p;
    if (!pool) {
      if (warned_.insert(run.spec.pool).second)
        spdlog::warn(R"("event":"exec_pool_unknown","pool":"{}","hint":"frugal admin pool set {} ...")",
                     run.spec.pool, run.spec.pool);
      continue;
    }
    std::vector<Instance> mine;
    for (const auto& x : *rows)
      if (x.pool == run.spec.pool) mine.push_back(x);

    // Releases: the policy found these nodes idle past the pool's idle_timeout.
    for (const auto& rel : plan.node_releases) {
      for (const auto& n : snapshot.nodes) {
        if (n.id != rel.node_id || n.pool_id != pool->id) continue;
        for (const auto& x : mine)
          if (x.node == n.name && x.state == InstanceState::kRunning) Destroy(run, x, "idle");
      }
    }
    Reconcile(run, *pool, mine, snapshot);

    // Requests: whole nodes, within max_nodes and the concurrent-create limit.
    int want = 0;
    for (const auto& req : plan.node_requests)
      if (req.pool_id == pool->id) want += (req.gpus + run.spec.node_gpus - 1) / run.spec.node_gpus;
    const int active = static_cast<int>(std::count_if(mine.begin(), mine.end(), Active));
    want = std::min({want, run.spec.max_nodes - active,
                     run.spec.max_concurrent_creates - run.creates_in_flight});
    if (Clock::now() < run.backoff_until) want = 0;
    for (int i = 0; i < want; ++i) Create(run, *pool);

    if (!run.list_in_flight && Clock::now() >= run.next_list) {
      run.list_in_flight = true;
      run.next_list = Clock::now() + run.spec.list_interval;
      const Timestamp launched = snapshot.now;
      auto env = Env(run, {});
      auto argv = run.spec.list;
      argv.push_back(run.spec.pool);
      auto cwd = Cwd(run);
      auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(run.spec.command_timeout);
      const std::string name = run.spec.pool;
      Launch([this, name, argv, env, cwd, timeout, launched] {
        CommandResult r = run_(argv, env, cwd, timeout);
        ListResult list;
        list.launched_at = launched;
        list.ok = r.ok();
        if (r.ok()) {
          size_t pos = 0;
          while (pos < r.out.size()) {
            size_t end = r.out.find('\n', pos);
            if (end == std::string::npos) end = r.out.size();
            std::string line = r.out.substr(pos, end - pos);
            pos = end + 1;
            if (line.empty() || line[0] == '#') continue;
            Listed item;
            const size_t sp = line.find_first_of(" \t");
            item.instance_id = FirstWord(line.substr(0, sp));
            if (sp != std::string::npos) item.node = FirstWord(line.substr(sp + 1));
            if (item.node == "-") item.node.clear();
            if (!item.instance_id.empty()) list.items.push_back(item);
          }
        } else {
          spdlog::warn(R"("event":"exec_list_failed","pool":"{}","error":"{}")", name,
                       r.Describe());
        }
        std::lock_guard<std::mutex> lock(mu_);
        if (PoolRun* p = Find(name)) {
          p->list_in_flight = false;
          if (list.ok) p->list = std::move(list);
        }
      });
    }
  }
}

void ExecProvider::Reconcile(PoolRun& run, const model::Pool& pool,
                             const std::vector<Instance>& rows, const model::Snapshot& snapshot) {
  std::set<std::string> live;
  for (const auto& n : snapshot.nodes)
    if (n.pool_id == pool.id) live.insert(n.name);
  const Timestamp now = snapshot.now;
  for (const auto& x : rows) {
    if (busy_.count(x.id)) continue;
    switch (x.state) {
      case InstanceState::kCreating:
        // No create in flight: this scheduler restarted while one ran. The list adopts it
        // if the cloud made it; otherwise it is given up after two command timeouts.
        if (now - x.requested_at > 2 * run.spec.command_timeout)
          End(x, "create_failed", "the scheduler lost track of its create (restarted?)");
        break;
      case InstanceState::kBooting:
        if (live.count(x.node)) {
          Change(x, {InstanceState::kBooting}, {InstanceState::kRunning, "", "", ""});
        } else if (x.created_at && now - *x.created_at > run.spec.boot_timeout) {
          run.backoff_until = Clock::now() + run.spec.stockout_backoff;
          run.backoff_why = "instance " + x.instance_id + " did not register in time";
          Destroy(run, x, "boot_timeout");
        }
        break;
      case InstanceState::kRunning:
        if (live.count(x.node)) {
          lost_since_.erase(x.node);
        } else {
          auto [it, fresh] = lost_since_.emplace(x.node, now);
          if (now - it->second > run.spec.boot_timeout) {
            lost_since_.erase(it);
            Destroy(run, x, "node_lost");
          }
        }
        break;
      case InstanceState::kDestroying: {
        auto retry = retry_after_.find(x.id);
        if (retry == retry_after_.end() || Clock::now() >= retry->second) Destroy(run, x, x.reason);
        break;
      }
      case InstanceState::kGone:
        break;
    }
  }
  if (run.list) {
    ListResult list = std::move(*run.list);
    run.list.reset();
    ApplyList(run, rows, list);
  }
}

void ExecProvider::ApplyList(PoolRun& run, const std::vector<Instance>& rows,
                             const ListResult& list) {
  std::map<std::string, const Listed*> by_id;
  for (const auto& item : list.items) by_id[item.instance_id] = &item;
  std::set<std::string> owned;
  for (const auto& x : rows) {
    if (!x.instance_id.empty()) owned.insert(x.instance_id);
    if (busy_.count(x.id)) continue;
    if (x.state == InstanceState::kCreating) {
      // A create this scheduler lost track of: the cloud made it after all.
      for (const auto& item : list.items)
        if (item.node == x.node && !item.instance_id.empty()) {
          Change(x, {InstanceState::kCreating},
                 {InstanceState::kBooting, item.instance_id, "adopted", ""});
          owned.insert(item.instance_id);
        }
      continue;
    }
    // Existed before the list ran, and the list does not show it: the cloud took it (a spot
    // reclaim) or someone terminated it. Its node's attempts end with the node's lease.
    const bool before = x.created_at && *x.created_at < list.launched_at;
    if (before && !by_id.count(x.instance_id) &&
        (x.state == InstanceState::kBooting || x.state == InstanceState::kRunning ||
         x.state == InstanceState::kDestroying)) {
      End(x, x.state == InstanceState::kDestroying ? x.reason : "vanished");
    }
  }
  const auto now = Clock::now();
  std::map<std::string, Clock::time_point> still;
  for (const auto& item : list.items) {
    if (owned.count(item.instance_id)) continue;
    auto it = run.unowned_since.find(item.instance_id);
    const auto since = it == run.unowned_since.end() ? now : it->second;
    if (now - since < run.spec.leak_grace) {
      still[item.instance_id] = since;
      continue;
    }
    // A leak: it bills and nobody owns it. Recorded, then destroyed like any other.
    std::string node = item.node.empty() ? "leak-" + item.instance_id : item.node;
    auto added = store_.AddInstance(run.spec.pool, node, run.spec.node_gpus, item.instance_id);
    if (!added.ok() && added.status().code() == StatusCode::kConflict) {
      node = "leak-" + item.instance_id;
      added = store_.AddInstance(run.spec.pool, node, run.spec.node_gpus, item.instance_id);
    }
    if (!added.ok()) {
      spdlog::warn(R"("event":"exec_leak_unrecorded","pool":"{}","instance":"{}","error":"{}")",
                   run.spec.pool, item.instance_id, added.status().message());
      still[item.instance_id] = since;
      continue;
    }
    spdlog::warn(R"("event":"exec_instance_leaked","pool":"{}","instance":"{}","node":"{}")",
                 run.spec.pool, item.instance_id, node);
    Destroy(run, *added, "leak");
  }
  run.unowned_since = std::move(still);
}

void ExecProvider::Create(PoolRun& run, const model::Pool& pool) {
  const std::string node = NodeName(run.spec.pool);
  // A join token of this instance's own: it registers `node` only, once (decision 0029).
  const std::string join_token = NewToken();
  auto row = store_.AddInstance(run.spec.pool, node, run.spec.node_gpus, "", Sha256Hex(join_token));
  if (!row.ok()) {
    spdlog::error(R"("event":"exec_create_unrecorded","pool":"{}","error":"{}")", run.spec.pool,
                  row.status().message());
    return;
  }
  busy_.insert(row->id);
  ++run.creates_in_flight;
  const std::string url = run.spec.worker_url.empty() ? scheduler_url_ : run.spec.worker_url;
  auto env = Env(run, {{"FRUGAL_NODE", node},
                       {"FRUGAL_JOIN_TOKEN", join_token},
                       {"FRUGAL_URL", url},
                       {"FRUGAL_NODE_GPUS", std::to_string(run.spec.node_gpus)},
                       {"FRUGAL_GPU_TYPE", pool.gpu_type},
                       {"FRUGAL_GPU_MEM_GB", std::to_string(pool.gpu_mem_gb)},
                       {"FRUGAL_CAPACITY", Capacity(pool.kind)},
                       {"FRUGAL_CHECKPOINT_ROOT", run.spec.checkpoint_root}});
  std::vector<std::string> argv = run.spec.create;
  argv.push_back(run.spec.pool);
  argv.push_back(node);
  spdlog::info(R"("event":"exec_create","pool":"{}","node":"{}")", run.spec.pool, node);
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(run.spec.command_timeout);
  const auto cwd = Cwd(run);
  const Instance x = *row;
  const std::string name = run.spec.pool;
  const auto backoff = run.spec.stockout_backoff;
  Launch([this, x, name, argv, env, cwd, timeout, backoff] {
    CommandResult r = run_(argv, env, cwd, timeout);
    const std::string id = r.ok() ? FirstWord(r.out) : "";
    std::string reason;
    if (!id.empty()) {
      auto st = store_.ChangeInstance(x.id, {InstanceState::kCreating},
                                      {InstanceState::kBooting, id, "", ""});
      if (!st.ok())
        spdlog::error(R"("event":"exec_create_unrecorded","node":"{}","instance":"{}","error":"{}")",
                      x.node, id, st.status().message());
      else
        spdlog::info(R"("event":"exec_created","pool":"{}","node":"{}","instance":"{}")", name,
                     x.node, id);
    } else {
      reason = r.exit_code == kNoCapacity && !r.timed_out ? "stockout" : "create_failed";
      std::string detail = r.ok() ? "exit 0 but no instance id on stdout" : r.Describe();
      (void)store_.ChangeInstance(x.id, {InstanceState::kCreating},
                                  {InstanceState::kGone, "", reason, detail});
      spdlog::warn(R"("event":"exec_{}","pool":"{}","node":"{}","detail":"{}")", reason, name,
                   x.node, detail.substr(0, 300));
    }
    std::lock_guard<std::mutex> lock(mu_);
    busy_.erase(x.id);
    if (PoolRun* p = Find(name)) {
      --p->creates_in_flight;
      if (!reason.empty()) {
        p->backoff_until = Clock::now() + backoff;
        p->backoff_why = reason;
      }
    }
  });
}

void ExecProvider::Destroy(PoolRun& run, const Instance& row, const std::string& reason) {
  if (busy_.count(row.id)) return;
  if (row.instance_id.empty()) {  // nothing to destroy in the cloud
    End(row, reason);
    return;
  }
  if (row.state != InstanceState::kDestroying) {
    auto st = store_.ChangeInstance(
        row.id, {InstanceState::kBooting, InstanceState::kRunning},
        {InstanceState::kDestroying, "", reason, ""});
    if (!st.ok()) return;  // changed meanwhile: the next cycle looks again
  }
  busy_.insert(row.id);
  retry_after_.erase(row.id);
  std::vector<std::string> argv = run.spec.destroy;
  argv.push_back(row.instance_id);
  auto env = Env(run, {{"FRUGAL_INSTANCE_ID", row.instance_id}, {"FRUGAL_NODE", row.node}});
  const auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(run.spec.command_timeout);
  const auto cwd = Cwd(run);
  spdlog::info(R"("event":"exec_destroy","pool":"{}","node":"{}","instance":"{}","reason":"{}")",
               run.spec.pool, row.node, row.instance_id, reason);
  Launch([this, row, reason, argv, env, cwd, timeout] {
    CommandResult r = run_(argv, env, cwd, timeout);
    if (r.ok()) {
      (void)store_.ChangeInstance(row.id, {InstanceState::kDestroying},
                                  {InstanceState::kGone, "", reason, ""});
    } else {
      spdlog::warn(R"("event":"exec_destroy_failed","node":"{}","instance":"{}","detail":"{}")",
                   row.node, row.instance_id, r.Describe().substr(0, 300));
    }
    std::lock_guard<std::mutex> lock(mu_);
    busy_.erase(row.id);
    // A failed destroy is tried again, but not in a tight loop.
    if (!r.ok()) retry_after_[row.id] = Clock::now() + std::chrono::seconds(30);
  });
}

void ExecProvider::End(const Instance& row, const std::string& reason, const std::string& detail) {
  Change(row,
         {InstanceState::kCreating, InstanceState::kBooting, InstanceState::kRunning,
          InstanceState::kDestroying},
         {InstanceState::kGone, "", reason, detail});
  spdlog::info(R"("event":"exec_instance_ended","node":"{}","instance":"{}","reason":"{}")",
               row.node, row.instance_id, reason);
}

void ExecProvider::Change(const Instance& row, std::vector<InstanceState> from,
                          const store::InstanceChange& change) {
  auto st = store_.ChangeInstance(row.id, from, change);
  if (!st.ok() && st.status().code() != StatusCode::kFailedPrecondition)
    spdlog::warn(R"("event":"exec_change_failed","node":"{}","error":"{}")", row.node,
                 st.status().message());
}

}  // namespace frugal::provider
