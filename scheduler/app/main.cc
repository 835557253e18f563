// frugal-scheduler: the REST API and the scheduling engine in one process. This file is
// the wiring diagram: config -> database -> store -> policy -> engine -> API.
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>

#include "api/server.h"
#include "api/webhook_sender.h"
#include "common/crypto.h"
#include "common/log.h"
#include "config/config.h"
#include "scheduler/app/embedded_db.h"
#include "scheduler/app/policy_settings.h"
#include "scheduler/engine/availability_refitter.h"
#include "scheduler/engine/engine.h"
#include "scheduler/engine/spot_solver.h"
#include "scheduler/engine/statistics_keeper.h"
#include "scheduler/policy/placement/cost_policy.h"
#include "scheduler/policy/policy.h"
#include "scheduler/provider/exec_provider.h"
#include "scheduler/provider/local_provider.h"
#include "scheduler/provider/providers.h"
#include "scheduler/service/advisor.h"
#include "scheduler/store/pg/pg_store.h"

namespace {

int Fail(const frugal::Status& st) {
  std::fprintf(stderr, "frugal-scheduler: %s\n", st.message().c_str());
  return 1;
}

// Bootstrap only ever opens a database that exists: run with the wrong state directory (a
// different working directory, FRUGAL_HOME unset), it used to initdb a second, empty
// embedded database and hand out a token no running scheduler knows.
int Bootstrap(const frugal::config::SchedulerConfig& cfg) {
  namespace fs = std::filesystem;
  if (cfg.database_url.empty()) {
    const fs::path pg = fs::absolute(cfg.state_dir) / "pg";
    std::error_code ec;
    if (!fs::exists(pg / "data" / "PG_VERSION", ec)) {
      std::fprintf(stderr,
                   "frugal-scheduler: no scheduler data in %s (the embedded database of state "
                   "directory %s, from --state-dir, FRUGAL_HOME or the default ./.frugal).\n"
                   "Start frugal-scheduler with that state directory first, or point bootstrap "
                   "at the scheduler's data with --state-dir DIR or --database-url URL.\n",
                   pg.c_str(), fs::absolute(cfg.state_dir).c_str());
      return 1;
    }
  }
  auto db = frugal::OpenDatabase(cfg);
  if (!db.ok()) return Fail(db.status());
  frugal::store::PgStore store(db->conninfo, 1);
  const std::string token = frugal::NewToken();
  auto issued = store.Bootstrap(frugal::Sha256Hex(token));
  if (!issued.ok()) return Fail(issued.status());
  std::printf("%s\n", token.c_str());
  std::fprintf(stderr, "Admin token created (shown once; keep it safe). Use it as FRUGAL_TOKEN.\n");
  return 0;
}

// The local provider, if configured: workers on this machine, checkpoints under the state
// directory. Created before the engine (which asks it about elastic pools), started once the
// API listens.
frugal::StatusOr<std::unique_ptr<frugal::provider::LocalProvider>> MakeLocalProvider(
    const frugal::config::SchedulerConfig& cfg) {
  namespace fs = std::filesystem;
  if (cfg.local_workers.empty()) return std::unique_ptr<frugal::provider::LocalProvider>();
  frugal::provider::LocalProviderOptions o;
  o.worker_bin = cfg.worker_bin;
  if (o.worker_bin.empty()) {
    std::error_code ec;
    o.worker_bin = (fs::read_symlink("/proc/self/exe", ec).parent_path() / "frugal-worker").string();
  }
  const fs::path state = fs::absolute(cfg.state_dir);
  o.dir = (state / "local").string();
  o.checkpoint_root = (state / "checkpoints").string();
  o.pools = cfg.local_workers;
  return frugal::provider::LocalProvider::Create(std::move(o));
}

// A worker token of a provider's own (team "system"), minted at each start: it only joins
// nodes (decision 0019).
frugal::StatusOr<std::string> ProviderToken(frugal::store::PgStore& store,
                                            const std::string& label) {
  if (auto team = store.CreateTeam("system");
      !team.ok() && team.status().code() != frugal::StatusCode::kConflict)
    return team.status();
  const std::string token = frugal::NewToken();
  auto issued = store.CreateToken("system", label, frugal::store::Role::kWorker,
                                  frugal::Sha256Hex(token));
  if (!issued.ok()) return issued.status();
  return token;
}

// Room for every connection the edge may hold, the database pool and the process's own
// files (decision 0055): the soft open-file limit is raised to fit, up to the hard one.
frugal::Status FitOpenFileLimit(const frugal::config::SchedulerConfig& cfg) {
  const rlim_t need = static_cast<rlim_t>(cfg.max_connections) + cfg.db_pool_size + 256;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return frugal::Status::Ok();
  if (r.rlim_cur == RLIM_INFINITY || r.rlim_cur >= need) return frugal::Status::Ok();
  if (r.rlim_max != RLIM_INFINITY && r.rlim_max < need) {
    return frugal::InvalidArgument(
        "max_connections " + std::to_string(cfg.max_connections) + " needs " +
            std::to_string(need) + " open files, but the hard limit is " +
            std::to_string(r.rlim_max) +
            ": raise it (ulimit -Hn, systemd's LimitNOFILE=) or lower max_connections",
        "max_connections");
  }
  r.rlim_cur = need;
  if (setrlimit(RLIMIT_NOFILE, &r) != 0) {
    return frugal::Unavailable("could not raise the open-file limit to " + std::to_string(need) +
                               ": " + std::strerror(errno));
  }
  return frugal::Status::Ok();
}

int Serve(const frugal::config::SchedulerConfig& cfg) {
  std::string host;
  int port;
  if (auto st = frugal::config::SplitHostPort(cfg.listen, host, port); !st.ok()) return Fail(st);
  if (auto st = FitOpenFileLimit(cfg); !st.ok()) return Fail(st);
  const frugal::policy::PolicyConfig policy_config = frugal::app::PolicyConfigFor(cfg);
  auto policy = frugal::policy::MakePolicy(cfg.policy, policy_config);
  if (!policy.ok()) return Fail(policy.status());

  // Signals are taken by one thread with sigwait; every other thread blocks them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto db = frugal::OpenDatabase(cfg);
  if (!db.ok()) return Fail(db.status());
  frugal::store::PgStore store(db->conninfo, cfg.db_pool_size,
                               {cfg.db_statement_timeout, cfg.db_lock_timeout});
  auto local = MakeLocalProvider(cfg);
  if (!local.ok()) return Fail(local.status());
  for (const auto& e : cfg.exec_pools)
    for (const auto& l : cfg.local_workers)
      if (e.pool == l.pool)
        return Fail(frugal::InvalidArgument("pool '" + e.pool +
                                            "' is in both local_workers and exec_pools"));
  std::unique_ptr<frugal::provider::ExecProvider> exec;
  if (!cfg.exec_pools.empty()) {
    frugal::provider::ExecProviderOptions o;
    o.pools = cfg.exec_pools;
    o.work_dir = (std::filesystem::absolute(cfg.state_dir) / "exec").string();
    exec = std::make_unique<frugal::provider::ExecProvider>(std::move(o), store);
  }
  frugal::provider::Providers providers;
  providers.Add(local->get());
  providers.Add(exec.get());
  // Budget alert webhooks go out on their own thread, never on the cycle's.
  frugal::api::HttpWebhookSender webhooks;
  frugal::engine::AlertDispatcher alerts(store, webhooks);
  if (cfg.leader_lease_ttl <= cfg.cycle_interval) {
    return Fail(frugal::InvalidArgument(
        "leader_lease_ttl (" + std::to_string(cfg.leader_lease_ttl.count()) +
        "s) must be longer than cycle_interval (" + std::to_string(cfg.cycle_interval.count()) +
        "s): the leader renews its lease once a cycle"));
  }
  frugal::engine::Engine engine(store, **policy,
                                {cfg.cycle_interval, {cfg.max_pending_per_cycle, cfg.max_pending_per_team},
                                 providers.empty() ? nullptr : &providers,
                                 [&alerts] { alerts.Wake(); },
                                 std::chrono::duration_cast<std::chrono::milliseconds>(
                                     cfg.leader_lease_ttl)});
  // Spot availability models are refitted on their own thread, never in the cycle.
  frugal::engine::AvailabilityRefitter refitter(store, cfg.availability_refit_interval);
  // Planner statistics follow bursts within a second, not autovacuum's minute (0040).
  frugal::engine::StatisticsKeeper statistics(store, std::chrono::seconds(1));
  // The learned spot controller's tables are solved off the cycle (decision 0023).
  std::shared_ptr<frugal::policy::SpotBook> spot_book;
  if (auto* cost = dynamic_cast<const frugal::policy::CostPolicy*>(policy->get()))
    spot_book = cost->spot_book();
  frugal::engine::SpotSolver spot_solver(spot_book, std::chrono::milliseconds(500));
  // `why` ranks a job among the pending jobs a full cycle reads.
  frugal::service::Advisor advisor(store, policy_config, spot_book.get(),
                                   {cfg.max_pending_per_cycle, cfg.max_pending_per_team});
  frugal::api::ApiOptions api_options;
  api_options.lease_ttl = cfg.lease_ttl;
  api_options.heartbeat_interval = cfg.heartbeat_interval;
  api_options.db_pool_size = cfg.db_pool_size;
  api_options.max_connections = cfg.max_connections;
  api_options.instances = &store;
  frugal::api::ApiServer server(store, store, store, engine, advisor, api_options);
  auto bound = server.Bind(host, port);
  if (!bound.ok()) return Fail(bound.status());

  engine.Start();
  alerts.Start();
  spot_solver.Start();
  refitter.Start();
  statistics.Start();
  const std::string reach = host == "0.0.0.0" ? "127.0.0.1" : host;
  const std::string url = "http://" + reach + ":" + std::to_string(*bound);
  if (*local) {
    auto token = ProviderToken(store, "local-provider");
    if (!token.ok()) {
      engine.Stop();
      return Fail(token.status());
    }
    (*local)->Start(url, *token);
  }
  if (exec) exec->Start(url);  // each instance gets a join token of its own
  std::thread signal_thread([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    spdlog::info(R"("event":"shutdown","signal":{})", sig);
    // Local workers first: they report their jobs preempted through the API.
    if (*local) (*local)->Stop();
    engine.EndWaits();  // long-polling workers get their answer before the server stops
    server.Stop();
  });
  spdlog::info(R"("event":"listening","address":"http://{}:{}","policy":"{}")", host, *bound,
               cfg.policy);
  std::printf("frugal-scheduler listening on http://%s:%d\n", host.c_str(), *bound);
  std::fflush(stdout);
  server.Run();
  // Run() returns only after Stop(), which only the signal thread calls.
  signal_thread.join();
  engine.Stop();
  if (exec) exec->Stop();  // commands in flight finish (each within its timeout)
  alerts.Stop();
  spot_solver.Stop();
  refitter.Stop();
  return 0;  // `db` stops the embedded PostgreSQL if we started it
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"frugal-scheduler: cost-aware GPU batch scheduler (API + engine)"};
  std::string config_path, listen, database_url, state_dir, log_level, policy;
  app.add_option("--config", config_path, "YAML config file")->check(CLI::ExistingFile);
  app.add_option("--listen", listen, "HOST:PORT to serve on (default 127.0.0.1:8080)");
  app.add_option("--database-url", database_url, "PostgreSQL URL (default: embedded)");
  app.add_option("--state-dir", state_dir, "state directory (default ./.frugal or $FRUGAL_HOME)");
  app.add_option("--log-level", log_level, "trace|debug|info|warn|error|off");
  app.add_option("--policy", policy, "placement policy: placement/cost (default) or placement/fifo");
  std::string lease_ttl, heartbeat, cycle;
  app.add_option("--lease-ttl", lease_ttl, "worker lease, e.g. 15s");
  app.add_option("--heartbeat-interval", heartbeat, "worker heartbeat interval, e.g. 2s");
  app.add_option("--cycle-interval", cycle, "scheduling cycle interval, e.g. 2s");
  std::string leader_ttl;
  app.add_option("--leader-lease-ttl", leader_ttl,
                 "leader lease: a standby takes over this long after the leader stops renewing "
                 "(default 6s)");
  auto* bootstrap = app.add_subcommand(
      "bootstrap", "create the first admin token of a running scheduler's database and print it");
  bootstrap->fallthrough();  // `bootstrap --state-dir DIR` as well as `--state-dir DIR bootstrap`
  app.require_subcommand(0, 1);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    (void)app.exit(e);  // prints what is wrong
    return 2;           // a usage error, as for every other command line tool
  }

  auto cfg = frugal::config::LoadSchedulerConfig(config_path, frugal::config::ProcessEnv);
  if (!cfg.ok()) return Fail(cfg.status());
  std::pair<const char*, const std::string*> flags[] = {
      {"listen", &listen},       {"database_url", &database_url}, {"state_dir", &state_dir},
      {"log_level", &log_level}, {"policy", &policy},       {"lease_ttl", &lease_ttl},
      {"heartbeat_interval", &heartbeat}, {"cycle_interval", &cycle},
      {"leader_lease_ttl", &leader_ttl}};
  for (auto& [key, value] : flags) {
    if (value->empty()) continue;
    if (auto st = frugal::config::SetKey(*cfg, key, *value); !st.ok()) return Fail(st);
  }
  if (auto st = frugal::InitLogging(bootstrap->parsed() ? "warn" : cfg->log_level); !st.ok())
    return Fail(st);
  return bootstrap->parsed() ? Bootstrap(*cfg) : Serve(*cfg);
}
