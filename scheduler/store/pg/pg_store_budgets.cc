// Team budgets (decision 0010): set/get, the period's use for the snapshot and the status
// route, alerts that fire once per threshold per period, and their webhook outbox.
// Use = spent + committed on paid capacity (on-demand, spot): spent is F summed over the
// period's ledger usage and running attempts (as the cost report does); committed is, per
// running attempt, what it was expected to cost beyond what it has cost so far.
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

namespace {

// $1 = the time (timestamptz, NULL = now()), $2 = team id (bigint, NULL = every team).
// Columns: team_id, name, period, limit, hard, alert_at_pct (JSON), webhook, period start
// and end (us), spent, committed.
constexpr const char* kBudgetUse =
    "WITH b AS (SELECT b.team_id, t.name, b.period, b.limit_micros, b.hard, b.alert_at_pct,"
    "   b.webhook_url, x.at, date_trunc(CASE b.period WHEN 'monthly' THEN 'month' ELSE 'week'"
    "   END, x.at AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS p0"
    "   FROM team_budgets b JOIN teams t ON t.id = b.team_id,"
    "   (SELECT coalesce($1::timestamptz, now()) AS at) x"
    "   WHERE $2::bigint IS NULL OR b.team_id = $2),"
    " iv AS (SELECT l.team_id, l.gpus, l.rate_micros_per_gpu_hour AS rate, l.origin_at,"
    "   greatest(l.started_at, b.p0) AS s, least(l.ended_at, b.at) AS e"
    "   FROM ledger_entries l JOIN b ON b.team_id = l.team_id"
    "   WHERE l.kind = 'usage' AND l.capacity_kind <> 'reserved'"
    "   AND l.ended_at > b.p0 AND l.started_at < b.at"
    "   UNION ALL"
    "   SELECT j.team_id, a.gpus, p.price_micros_per_gpu_hour, a.started_at,"
    "   greatest(a.started_at, b.p0), least(coalesce(a.ended_at, b.at), b.at)"
    "   FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN b ON b.team_id = j.team_id"
    "   JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
    "   WHERE (a.ended_at IS NULL OR NOT a.billed) AND p.capacity_kind <> 'reserved'"
    "   AND a.started_at < b.at),"
    " spent AS (SELECT team_id, sum(frugal_cost_micros(gpus, rate, origin_at, s, e)) AS v"
    "   FROM iv WHERE e > s GROUP BY team_id),"
    " committed AS (SELECT j.team_id, sum(greatest(0, a.expected_cost_micros -"
    "   frugal_cost_micros(a.gpus, p.price_micros_per_gpu_hour, a.started_at, a.started_at,"
    "   greatest(a.started_at, b.at)))) AS v"
    "   FROM attempts a JOIN jobs j ON j.id = a.job_id JOIN b ON b.team_id = j.team_id"
    "   JOIN nodes n ON n.id = a.node_id JOIN pools p ON p.id = n.pool_id"
    "   WHERE a.ended_at IS NULL AND p.capacity_kind <> 'reserved' GROUP BY j.team_id)"
    " SELECT b.team_id, b.name, b.period, b.limit_micros, b.hard, to_json(b.alert_at_pct)::text,"
    "   coalesce(b.webhook_url, ''), " FRUGAL_US("b.p0") ", " FRUGAL_US(
        "b.p0 + CASE b.period WHEN 'monthly' THEN interval '1 month' ELSE interval '1 week' END")
    ", coalesce(spent.v, 0)::bigint, coalesce(committed.v, 0)::bigint"
    " FROM b LEFT JOIN spent USING (team_id) LEFT JOIN committed USING (team_id)"
    " ORDER BY b.team_id";

struct Use {
  model::TeamId team_id = 0;
  BudgetStatus status;
};

// `checked`: the caller has read pg::AnyBudgetStatement() and found a budget.
StatusOr<std::vector<Use>> LoadUse(PgConn& c, std::optional<Timestamp> at,
                                   std::optional<model::TeamId> team, bool checked = false) {
  if (!team && !checked) {
    // The use query is planned anew at each call (PostgreSQL finds no generic plan for it
    // cheaper), about a millisecond for its dozen joins; the cycle and the alerts ask for
    // every team's, and most clusters have no budget at all.
    ASSIGN_OR_RETURN(auto any, c.Exec(pg::AnyBudgetStatement()));
    if (!any.Bool(0, 0)) return std::vector<Use>{};
  }
  ASSIGN_OR_RETURN(auto r, c.Exec("budget_use", kBudgetUse,
                                  {at ? PgParam(pg::ToTimeParam(*at)) : std::nullopt,
                                   team ? PgParam(std::to_string(*team)) : std::nullopt}));
  std::vector<Use> out;
  for (int i = 0; i < r.rows(); ++i) {
    Use u;
    u.team_id = r.Int(i, 0);
    BudgetStatus& st = u.status;
    st.team = r.Text(i, 1);
    st.spec.period = model::ParseBudgetPeriod(r.Text(i, 2)).value();
    st.spec.limit = r.Int(i, 3);
    st.spec.hard = r.Bool(i, 4);
    st.spec.alert_at_pct = json::parse(r.Text(i, 5)).get<std::vector<int>>();
    st.spec.webhook_url = r.Text(i, 6);
    st.period_start = pg::FromMicros(r.Int(i, 7));
    st.period_end = pg::FromMicros(r.Int(i, 8));
    st.spent = r.Int(i, 9);
    st.committed = r.Int(i, 10);
    out.push_back(std::move(u));
  }
  return out;
}

StatusOr<std::string> TeamIdOf(PgConn& c, const std::string& team) {
  ASSIGN_OR_RETURN(auto t, c.Exec("budget_team", "SELECT id FROM teams WHERE name = $1", {team}));
  if (t.rows() == 0) return NotFound("team '" + team + "' does not exist");
  return t.Text(0, 0);
}

StatusOr<BudgetStatus> StatusOf(PgConn& c, const std::string& team, std::optional<Timestamp> at) {
  // Whether the team has a budget at all, before the use query: most teams have none, and
  // that query's plan costs a tenth of a millisecond to start even when it finds nothing.
  ASSIGN_OR_RETURN(auto t, c.Exec("budget_team_has",
                                  "SELECT t.id, EXISTS (SELECT 1 FROM team_budgets b"
                                  " WHERE b.team_id = t.id) FROM teams t WHERE t.name = $1",
                                  {team}));
  if (t.rows() == 0) return NotFound("team '" + team + "' does not exist");
  if (!t.Bool(0, 1)) return NotFound("team '" + team + "' has no budget");
  ASSIGN_OR_RETURN(auto use, LoadUse(c, at, t.Int(0, 0)));
  if (use.empty()) return NotFound("team '" + team + "' has no budget");
  return std::move(use[0].status);
}

constexpr const char* kAlertColumns =
    "a.id, t.name, " FRUGAL_US("a.period_start") ", a.threshold_pct, a.limit_micros,"
    " a.used_micros, " FRUGAL_US("a.fired_at") ", a.delivery_state, a.delivery_attempts,"
    " coalesce(a.last_error, '')";

BudgetAlert ParseAlert(const PgResult& r, int i) {
  BudgetAlert a;
  a.id = r.Int(i, 0);
  a.team = r.Text(i, 1);
  a.period_start = pg::FromMicros(r.Int(i, 2));
  a.threshold_pct = static_cast<int>(r.Int(i, 3));
  a.limit = r.Int(i, 4);
  a.used = r.Int(i, 5);
  a.fired_at = pg::FromMicros(r.Int(i, 6));
  a.delivery_state = r.Text(i, 7);
  a.delivery_attempts = static_cast<int>(r.Int(i, 8));
  a.last_error = r.Text(i, 9);
  return a;
}

// The smallest use that reaches `pct` percent of `limit`: ceil(limit x pct / 100),
// computed without overflowing.
Micros ThresholdAmount(Micros limit, int pct) {
  return (limit / 100) * pct + ((limit % 100) * pct + 99) / 100;
}

std::string ArrayLiteral(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "}";
}

}  // namespace

namespace pg {

StatusOr<std::map<model::TeamId, model::TeamBudget>> LoadBudgets(PgConn& c) {
  ASSIGN_OR_RETURN(auto use, LoadUse(c, std::nullopt, std::nullopt));
  std::map<model::TeamId, model::TeamBudget> out;
  for (const auto& u : use) {
    const BudgetStatus& st = u.status;
    out[u.team_id] = {st.team, st.spec.period, st.spec.limit, st.spent, st.committed,
                      st.spec.hard};
  }
  return out;
}

}  // namespace pg

namespace pg {

StatusOr<ConfigChange> SetBudgetTx(PgConn& c, const Principal& actor, const std::string& team,
                                   const BudgetSpec& b) {
  ASSIGN_OR_RETURN(std::string id, TeamIdOf(c, team));
  // The audit's before/after (decision 0011): money as dollars text, as admins write it.
  ASSIGN_OR_RETURN(auto old, c.Exec("budget_before",
                                    "SELECT json_build_object('period', period, 'limit',"
                                    " limit_micros, 'alert_at_pct', alert_at_pct, 'hard', hard,"
                                    " 'webhook_url', coalesce(webhook_url, ''))::text"
                                    " FROM team_budgets WHERE team_id = $1 FOR UPDATE",
                                    {id}));
  auto view = [](json j) {
    j["limit"] = FormatDollars(j["limit"].get<Micros>(), true);
    return j;
  };
  const json before = old.rows() ? view(json::parse(old.Text(0, 0))) : json(nullptr);
  const json after = view({{"period", model::ToString(b.period)}, {"limit", b.limit},
                           {"alert_at_pct", b.alert_at_pct}, {"hard", b.hard},
                           {"webhook_url", b.webhook_url}});
  ConfigChange change{ConfigChange::Kind::kUnchanged, "budget/" + team, before.dump(),
                      after.dump()};
  if (before == after) return change;
  change.kind = old.rows() ? ConfigChange::Kind::kUpdated : ConfigChange::Kind::kCreated;
  RETURN_IF_ERROR(
      c.Exec("budget_set",
             "INSERT INTO team_budgets (team_id, period, limit_micros, alert_at_pct, hard,"
             " webhook_url) VALUES ($1, $2, $3, $4::integer[], $5, nullif($6, ''))"
             " ON CONFLICT (team_id) DO UPDATE SET period = excluded.period,"
             " limit_micros = excluded.limit_micros, alert_at_pct = excluded.alert_at_pct,"
             " hard = excluded.hard, webhook_url = excluded.webhook_url, updated_at = now()",
             {id, model::ToString(b.period), std::to_string(b.limit),
              ArrayLiteral(b.alert_at_pct), b.hard ? "true" : "false", b.webhook_url})
          .status());
  RETURN_IF_ERROR(pg::AppendAudit(c, actor, "budget.set", change.subject, before, after));
  return change;
}

}  // namespace pg

StatusOr<BudgetSpec> PgStore::SetBudget(const Principal& actor, const std::string& team,
                                        const BudgetSpec& b) {
  return InTransaction<BudgetSpec>(pool_, [&](PgConn& c) -> StatusOr<BudgetSpec> {
    RETURN_IF_ERROR(pg::SetBudgetTx(c, actor, team, b).status());
    return b;
  });
}

StatusOr<BudgetSpec> PgStore::GetBudget(const std::string& team) {
  return InTransaction<BudgetSpec>(pool_, [&](PgConn& c) -> StatusOr<BudgetSpec> {
    ASSIGN_OR_RETURN(std::string id, TeamIdOf(c, team));
    ASSIGN_OR_RETURN(auto r, c.Exec("budget_get",
                                    "SELECT period, limit_micros, to_json(alert_at_pct)::text,"
                                    " hard, coalesce(webhook_url, '') FROM team_budgets"
                                    " WHERE team_id = $1",
                                    {id}));
    if (r.rows() == 0) return NotFound("team '" + team + "' has no budget");
    BudgetSpec b;
    b.period = model::ParseBudgetPeriod(r.Text(0, 0)).value();
    b.limit = r.Int(0, 1);
    b.alert_at_pct = json::parse(r.Text(0, 2)).get<std::vector<int>>();
    b.hard = r.Bool(0, 3);
    b.webhook_url = r.Text(0, 4);
    return b;
  });
}

StatusOr<BudgetStatus> PgStore::GetBudgetStatus(const std::string& team,
                                                std::optional<Timestamp> at) {
  // Outside a transaction (every submit reads this): a team's id never changes, and an
  // alert read a moment after the use it was fired for only shows that moment.
  return Autocommit<BudgetStatus>(pool_, Repeat::kReads, [&](PgConn& c) -> StatusOr<BudgetStatus> {
    ASSIGN_OR_RETURN(BudgetStatus st, StatusOf(c, team, at));
    ASSIGN_OR_RETURN(auto r, c.Exec("budget_alerts_of",
                                    std::string("SELECT ") + kAlertColumns +
                                        " FROM budget_alerts a JOIN teams t ON t.id = a.team_id"
                                        " WHERE t.name = $1 AND a.period_start = $2::timestamptz"
                                        " ORDER BY a.threshold_pct, a.id",
                                    {team, pg::ToTimeParam(st.period_start)}));
    for (int i = 0; i < r.rows(); ++i) st.alerts.push_back(ParseAlert(r, i));
    return st;
  });
}

StatusOr<std::vector<BudgetAlert>> PgStore::FireBudgetAlerts(std::optional<Timestamp> at) {
  using Out = std::vector<BudgetAlert>;
  return InTransaction<Out>(pool_, [&](PgConn& c) -> StatusOr<Out> {
    RETURN_IF_ERROR(CheckLeaderFence(c));
    return pg::FireBudgetAlerts(c, at);
  });
}

namespace pg {

PgStatement AnyBudgetStatement() {
  return {"budget_any", "SELECT EXISTS (SELECT 1 FROM team_budgets)", {}};
}

StatusOr<std::vector<BudgetAlert>> FireBudgetAlerts(PgConn& c, std::optional<Timestamp> at,
                                                    bool any_checked) {
  using Out = std::vector<BudgetAlert>;
  ASSIGN_OR_RETURN(auto use, LoadUse(c, at, std::nullopt, any_checked));
  Out fired;
  for (const auto& u : use) {
    const BudgetStatus& st = u.status;
    for (int pct : st.spec.alert_at_pct) {
      if (st.used() < ThresholdAmount(st.spec.limit, pct)) continue;
      json payload = {{"event", "budget_alert"},
                      {"team", st.team},
                      {"period", model::ToString(st.spec.period)},
                      {"period_start", FormatRfc3339(st.period_start)},
                      {"threshold_pct", pct},
                      {"limit", FormatDollars(st.spec.limit, true)},
                      {"used", FormatDollars(st.used(), true)},
                      {"spent", FormatDollars(st.spent, true)},
                      {"committed", FormatDollars(st.committed, true)},
                      {"hard", st.spec.hard}};
      // The unique (team, period, threshold) row is what makes "once" hold.
      ASSIGN_OR_RETURN(
          auto r,
          c.Exec("budget_alert_fire",
                 std::string("WITH ins AS (INSERT INTO budget_alerts (team_id, period_start, threshold_pct,"
                 "   limit_micros, used_micros, payload, webhook_url, delivery_state,"
                 "   next_delivery_at) VALUES ($1, $2::timestamptz, $3, $4, $5, $6::jsonb,"
                 "   nullif($7, ''), CASE WHEN $7 = '' THEN 'none' ELSE 'pending' END, now())"
                 "   ON CONFLICT (team_id, period_start, threshold_pct) DO NOTHING"
                 "   RETURNING *) SELECT ") + kAlertColumns +
                     " FROM ins a JOIN teams t ON t.id = a.team_id",
                 {std::to_string(u.team_id), pg::ToTimeParam(st.period_start),
                  std::to_string(pct), std::to_string(st.spec.limit),
                  std::to_string(st.used()), payload.dump(), st.spec.webhook_url}));
      for (int i = 0; i < r.rows(); ++i) fired.push_back(ParseAlert(r, i));
    }
  }
  return fired;
}

}  // namespace pg

StatusOr<std::vector<AlertDelivery>> PgStore::ClaimAlertDeliveries(int limit) {
  using Out = std::vector<AlertDelivery>;
  return InTransaction<Out>(pool_, [&](PgConn& c) -> StatusOr<Out> {
    ASSIGN_OR_RETURN(
        auto r, c.Exec("budget_alert_claim",
                       "UPDATE budget_alerts SET delivery_attempts = delivery_attempts + 1,"
                       " next_delivery_at = now() + interval '60 seconds'"
                       " WHERE id IN (SELECT id FROM budget_alerts WHERE delivery_state ="
                       " 'pending' AND next_delivery_at <= now() ORDER BY id LIMIT $1"
                       " FOR UPDATE SKIP LOCKED)"
                       " RETURNING id, webhook_url, payload::text, delivery_attempts",
                       {std::to_string(limit)}));
    Out out;
    for (int i = 0; i < r.rows(); ++i)
      out.push_back({r.Int(i, 0), r.Text(i, 1), r.Text(i, 2), static_cast<int>(r.Int(i, 3))});
    return out;
  });
}

Status PgStore::RecordAlertDelivery(std::int64_t alert_id, bool delivered,
                                    const std::string& error, int max_attempts,
                                    Seconds backoff) {
  return InTransaction<bool>(pool_, [&](PgConn& c) -> StatusOr<bool> {
    RETURN_IF_ERROR(
        c.Exec("budget_alert_record",
               "UPDATE budget_alerts SET"
               " delivery_state = CASE WHEN $2 THEN 'delivered'"
               "   WHEN delivery_attempts >= $4 THEN 'failed' ELSE 'pending' END,"
               " delivered_at = CASE WHEN $2 THEN now() END,"
               " last_error = CASE WHEN $2 THEN NULL ELSE left($3, 500) END,"
               " next_delivery_at = CASE WHEN $2 OR delivery_attempts >= $4 THEN NULL"
               "   ELSE now() + make_interval(secs => $5::float8 *"
               "   power(2, delivery_attempts - 1)) END"
               " WHERE id = $1 AND delivery_state = 'pending'",
               {std::to_string(alert_id), delivered ? "true" : "false", error,
                std::to_string(max_attempts), std::to_string(backoff.count())})
            .status());
    return true;
  }).status();
}

}  // namespace frugal::store
