// The JSON views the dashboard reads beyond the job and cost routes:
//   GET /v1/overview              pools' GPUs by state, the queue, recent interruptions
//   GET /v1/jobs/{id}/timeline    a job's attempts (pool, node, cost) and checkpoints
//   GET /v1/reports/cost/series   the cost report cut into equal time buckets
// Researchers see their own team's jobs and money; pool GPU counts are cluster-wide for
// every user (as Slurm's sinfo), prices and utilisation stay admin-only.
#include "api/routes.h"
#include "common/money.h"

namespace frugal::api {

namespace {

constexpr int kInterruptions = 20;
constexpr int kDefaultBuckets = 24;
constexpr int kMaxBuckets = 96;

StatusOr<Reply> Overview(Context& ctx, const store::Principal& who) {
  ASSIGN_OR_RETURN(auto m, ctx.store.LoadMetrics());
  json pools = json::array();
  for (const auto& p : m.pools) {
    // busy <= paid normally; clamp so a committed figure below what runs (or a draining
    // node past max_gpus, the pool was shrunk) never shows negative GPUs.
    const auto idle = std::max<std::int64_t>(0, p.paid_gpus - p.busy_gpus);
    pools.push_back({{"pool", p.pool},
                     {"capacity_kind", p.capacity_kind},
                     {"max_gpus", p.max_gpus},
                     {"allocated_gpus", p.allocated_gpus},
                     {"paid_gpus", p.paid_gpus},
                     {"busy_gpus", p.busy_gpus},
                     {"idle_paid_gpus", idle},
                     {"free_gpus", std::max<std::int64_t>(0, p.max_gpus - p.allocated_gpus)},
                     {"live_nodes", p.live_nodes},
                     {"draining_nodes", p.draining_nodes}});
  }
  const auto team = VisibleTeam(who);
  json queue = json::array();
  for (const auto& q : m.queue) {
    if (team && q.team != who.team) continue;
    queue.push_back({{"team", q.team}, {"state", q.state}, {"priority", q.priority},
                     {"jobs", q.jobs}});
  }
  ASSIGN_OR_RETURN(auto recent, ctx.store.RecentInterruptions(team, kInterruptions));
  json interruptions = json::array();
  for (const auto& x : recent) interruptions.push_back(EncodeInterruption(x));
  return Reply{200, {{"pools", pools}, {"queue", queue}, {"interruptions", interruptions}}};
}

StatusOr<Reply> Timeline(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  RETURN_IF_ERROR(CheckQueryParams(req, {}));
  ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
  ASSIGN_OR_RETURN(auto t, ctx.store.JobTimeline(id, VisibleTeam(who)));
  json attempts = json::array();
  Micros total = 0, lost = 0;
  for (const auto& a : t.attempts) {
    total += a.cost;
    lost += a.lost;
    attempts.push_back({{"id", a.id},
                        {"number", a.number},
                        {"pool", a.pool},
                        {"capacity_kind", a.capacity_kind},
                        {"node", a.node},
                        {"gpus", a.gpus},
                        {"started_at", FormatRfc3339(a.started_at)},
                        {"ended_at", OptTime(a.ended_at)},
                        {"end_reason", a.end_reason.empty() ? json(nullptr) : json(a.end_reason)},
                        {"stop_kind", a.stop_kind.empty() ? json(nullptr) : json(a.stop_kind)},
                        {"cost", Money(a.cost)},
                        {"cost_micros", a.cost},
                        {"lost", Money(a.lost)},
                        {"lost_micros", a.lost}});
  }
  json checkpoints = json::array();
  for (const auto& c : t.checkpoints) {
    checkpoints.push_back({{"attempt_id", c.attempt_id},
                           {"step", c.step},
                           {"progress", c.progress},
                           {"created_at", FormatRfc3339(c.created_at)}});
  }
  return Reply{200, {{"job", t.job},
                     {"now", FormatRfc3339(t.now)},
                     {"attempts", attempts},
                     {"checkpoints", checkpoints},
                     {"cost", Money(total)},
                     {"cost_micros", total},
                     {"wasted", Money(lost)},
                     {"wasted_micros", lost}}};
}

StatusOr<std::optional<Timestamp>> TimeParam(const httplib::Request& req, const char* name) {
  if (!req.has_param(name)) return std::optional<Timestamp>();
  auto t = ParseRfc3339(req.get_param_value(name));
  if (!t.ok()) return InvalidArgument(std::string(name) + ": " + t.status().message(), name);
  return std::optional<Timestamp>(*t);
}

// The whole window's report first (it settles the default from/to in database time), then
// one report per bucket. Buckets share their edges and the ledger's F telescopes, so the
// buckets' spend adds up exactly to the window's total.
StatusOr<Reply> Series(Context& ctx, const httplib::Request& req, const store::Principal& who) {
  RETURN_IF_ERROR(CheckQueryParams(req, {"by", "from", "to", "buckets"}));
  store::CostQuery q;
  if (req.has_param("by")) {
    ASSIGN_OR_RETURN(q.by, store::ParseCostDimension(req.get_param_value("by")));
    if (q.by == store::CostDimension::kJob)
      return InvalidArgument("by must be team, project, user or pool (not job) for a series", "by");
  }
  int buckets = kDefaultBuckets;
  if (req.has_param("buckets")) {
    const std::string text = req.get_param_value("buckets");
    std::int64_t n = 0;
    if (text.empty() || text.size() > 3 || text.find_first_not_of("0123456789") != std::string::npos ||
        (n = std::stoll(text)) < 1 || n > kMaxBuckets)
      return InvalidArgument("buckets must be an integer from 1 to 96", "buckets");
    buckets = static_cast<int>(n);
  }
  ASSIGN_OR_RETURN(q.from, TimeParam(req, "from"));
  ASSIGN_OR_RETURN(q.to, TimeParam(req, "to"));
  if (q.from && q.to && *q.to < *q.from) return InvalidArgument("to must not be before from", "to");
  q.team = VisibleTeam(who);
  ASSIGN_OR_RETURN(auto whole, ctx.costs.Cost(q));
  const auto span = std::chrono::duration_cast<std::chrono::microseconds>(whole.to - whole.from);
  json out = json::array();
  for (int i = 0; i < buckets; ++i) {
    store::CostQuery b = q;
    b.from = whole.from + span * i / buckets;
    b.to = whole.from + span * (i + 1) / buckets;
    ASSIGN_OR_RETURN(auto rep, ctx.costs.Cost(b));
    out.push_back({{"from", FormatRfc3339(*b.from)},
                   {"to", FormatRfc3339(*b.to)},
                   {"rows", EncodeSeriesRows(rep)},
                   {"spend_micros", rep.total.spend},
                   {"wasted_micros", rep.total.wasted}});
  }
  return Reply{200, {{"by", store::ToString(q.by)},
                     {"from", FormatRfc3339(whole.from)},
                     {"to", FormatRfc3339(whole.to)},
                     {"buckets", out},
                     {"total", {{"spend", Money(whole.total.spend)},
                                {"spend_micros", whole.total.spend},
                                {"wasted_micros", whole.total.wasted}}}}};
}

}  // namespace

void RegisterDashboardRoutes(Router& s, Context& ctx) {
  s.Get("/v1/overview", Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req,
                                                         auto& who) -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          return Overview(ctx, *who);
        }));
  s.Get(R"(/v1/jobs/([^/]+)/timeline)",
        Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req, auto& who) {
          return Timeline(ctx, req, *who);
        }));
  s.Get("/v1/reports/cost/series",
        Route(ctx, Access::kUsers, [&ctx](const httplib::Request& req, auto& who) {
          return Series(ctx, req, *who);
        }));
}

}  // namespace frugal::api
