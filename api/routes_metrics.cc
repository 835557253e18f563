// GET /metrics: the Prometheus text format (0.0.4) for an admin or metrics token: the
// process's own instruments (metrics::Default(): cycle durations, request latencies,
// database errors) and, read from the database at each scrape, the queue, lifetime job and
// attempt counts, pool capacity and use, and money. GET /openapi.yaml: the API description.
#include "api/routes.h"
#include "common/metrics.h"

namespace frugal::api {

namespace {

constexpr const char* kTextFormat = "text/plain; version=0.0.4; charset=utf-8";

double Dollars(Micros m) { return static_cast<double>(m) / 1e6; }

void AddJobFamilies(metrics::Registry& r, const store::StoreMetrics& m) {
  auto& queue = r.Gauge("frugal_queue_jobs",
                        "Jobs not yet ended (pending, held or running), by state, team and "
                        "priority class.",
                        {"state", "team", "priority"});
  for (const auto& q : m.queue) queue.Set({q.state, q.team, q.priority}, static_cast<double>(q.jobs));
  auto& submitted = r.Counter("frugal_jobs_submitted_total", "Jobs ever submitted, by team.",
                              {"team"});
  for (const auto& c : m.submitted) submitted.Inc({c.team}, static_cast<double>(c.jobs));
  auto& finished = r.Counter("frugal_jobs_finished_total",
                             "Jobs ended, by final state (succeeded, failed, cancelled, "
                             "timed_out) and team.",
                             {"state", "team"});
  for (const auto& c : m.finished) finished.Inc({c.state, c.team}, static_cast<double>(c.jobs));
}

void AddAttemptFamilies(metrics::Registry& r, const store::StoreMetrics& m) {
  auto& started = r.Counter("frugal_attempts_started_total",
                            "Attempts started (a job placed on a node), by pool.", {"pool"});
  for (const auto& c : m.started) started.Inc({c.pool}, static_cast<double>(c.attempts));
  auto& ended = r.Counter("frugal_attempts_ended_total",
                          "Attempts ended, by pool and reason (succeeded, failed, preempted, "
                          "node_lost, cancelled, timed_out).",
                          {"pool", "reason"});
  for (const auto& c : m.ended) ended.Inc({c.pool, c.reason}, static_cast<double>(c.attempts));
  auto& preempted = r.Counter("frugal_preemptions_total",
                              "Attempts preempted, by pool and cause: node (the node was "
                              "reclaimed or shut down), priority, migrate_off_spot, "
                              "migrate_to_spot, idle_reclaim (requeued by the idle-GPU "
                              "guardrail).",
                              {"pool", "cause"});
  for (const auto& c : m.preempted)
    preempted.Inc({c.pool, c.reason}, static_cast<double>(c.attempts));
  auto& idle = r.Counter("frugal_idle_stops_total",
                         "Attempts the idle-GPU guardrail ordered stopped, by pool and action: "
                         "requeue (resumes from its checkpoint) or stop (it never "
                         "checkpointed; the job ends cancelled).",
                         {"pool", "action"});
  for (const auto& c : m.idle_stops) idle.Inc({c.pool, c.reason}, static_cast<double>(c.attempts));
}

void AddPoolFamilies(metrics::Registry& r, const store::StoreMetrics& m) {
  auto& max = r.Gauge("frugal_pool_max_gpus", "The most GPUs a pool may have (its max_gpus).",
                      {"pool", "capacity_kind"});
  auto& allocated = r.Gauge("frugal_pool_allocated_gpus",
                            "GPUs on a pool's live and draining nodes: capacity held now.",
                            {"pool", "capacity_kind"});
  auto& busy = r.Gauge("frugal_pool_busy_gpus", "GPUs of a pool held by running attempts.",
                       {"pool", "capacity_kind"});
  auto& paid = r.Gauge("frugal_pool_paid_gpus",
                       "GPUs of a pool paid for now: a reserved pool's committed_gpus or its "
                       "registered nodes' GPUs; other pools: their live and draining nodes'.",
                       {"pool", "capacity_kind"});
  auto& nodes = r.Gauge("frugal_pool_nodes",
                        "Nodes of a pool that hold capacity, by state (live, draining); idle "
                        "ones (live, running nothing) are also counted as idle.",
                        {"pool", "state"});
  for (const auto& p : m.pools) {
    max.Set({p.pool, p.capacity_kind}, static_cast<double>(p.max_gpus));
    allocated.Set({p.pool, p.capacity_kind}, static_cast<double>(p.allocated_gpus));
    busy.Set({p.pool, p.capacity_kind}, static_cast<double>(p.busy_gpus));
    paid.Set({p.pool, p.capacity_kind}, static_cast<double>(p.paid_gpus));
    nodes.Set({p.pool, "live"}, static_cast<double>(p.live_nodes));
    nodes.Set({p.pool, "draining"}, static_cast<double>(p.draining_nodes));
    nodes.Set({p.pool, "idle"}, static_cast<double>(p.idle_nodes));
  }
}

void AddSpendFamilies(metrics::Registry& r, const store::StoreMetrics& m) {
  auto& spend = r.Counter("frugal_spend_dollars_total",
                          "Money spent, by team and pool: the cost ledger plus running "
                          "attempts up to now (as GET /v1/reports/cost).",
                          {"team", "pool"});
  auto& wasted = r.Counter("frugal_wasted_dollars_total",
                           "Part of the spend lost to preemptions and lost nodes (work since "
                           "the last checkpoint), by team and pool.",
                           {"team", "pool"});
  auto& rate = r.Gauge("frugal_spend_rate_dollars_per_hour",
                       "What the running attempts cost per hour at their pools' prices, by "
                       "team and pool.",
                       {"team", "pool"});
  for (const auto& s : m.spend) {
    spend.Inc({s.team, s.pool}, Dollars(s.spend));
    wasted.Inc({s.team, s.pool}, Dollars(s.wasted));
    rate.Set({s.team, s.pool}, Dollars(s.rate_per_hour));
  }
}

// The exec provider's instances (issue 18): how many are starting, running, being destroyed,
// and what ended how, so a broken create script or a leak shows on a dashboard.
void AddInstanceFamilies(metrics::Registry& r, const std::vector<store::Instance>& rows) {
  auto& now = r.Gauge("frugal_instances",
                      "Cloud instances of exec pools not yet gone, by pool and state (creating, "
                      "booting, running, destroying); leaked ones are also counted as leaked.",
                      {"pool", "state"});
  auto& ended = r.Counter("frugal_instances_ended_total",
                          "Exec-pool instances ended, by pool and reason (idle, boot_timeout, "
                          "node_lost, leak, vanished, stockout, create_failed).",
                          {"pool", "reason"});
  auto& cost = r.Counter("frugal_instance_cost_dollars_total",
                         "What the exec pools' instances cost (created to ended), by pool.",
                         {"pool"});
  for (const auto& x : rows) {
    cost.Inc({x.pool}, Dollars(x.cost_micros));
    if (x.state == store::InstanceState::kGone) {
      ended.Inc({x.pool, x.reason}, 1);
    } else {
      now.Inc({x.pool, store::ToString(x.state)}, 1);
      if (x.leaked) now.Inc({x.pool, "leaked"}, 1);
    }
  }
}

}  // namespace

void RegisterMetricsRoutes(Router& s, Context& ctx) {
  s.Get("/metrics", Route(ctx, Access::kMetrics, [&ctx](const httplib::Request& req,
                                                         auto&) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          // A scrape-local registry: database figures are read fresh, never accumulated.
          metrics::Registry scrape;
          auto& up = scrape.Gauge("frugal_database_up",
                                  "1 if this scrape read the database's figures, else 0 "
                                  "(the frugal_queue_, _jobs_, _attempts_, _pool_ and spend "
                                  "families are then missing).");
          auto figures = ctx.store.LoadMetrics();
          if (figures.ok()) {
            up.Set({}, 1);
            AddJobFamilies(scrape, *figures);
            AddAttemptFamilies(scrape, *figures);
            AddPoolFamilies(scrape, *figures);
            AddSpendFamilies(scrape, *figures);
            if (ctx.options.instances) {
              auto rows = ctx.options.instances->ListInstances(Timestamp{});
              if (rows.ok()) AddInstanceFamilies(scrape, *rows);
            }
          } else {
            // Still answer: latency and error counts matter most while the database is down.
            metrics::CountDatabaseError(figures.status(), "metrics");
          }
          return Reply::Text(kTextFormat, metrics::Default().Render() + scrape.Render());
        }));

  s.Get("/openapi.yaml", Route(ctx, Access::kPublic, [](auto&, auto&) -> StatusOr<Reply> {
          return Reply::Text("application/yaml", OpenApiYaml());
        }));
}

}  // namespace frugal::api
