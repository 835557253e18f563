#include "tests/testing/invariants.h"

#include "scheduler/store/pg/pg_conn.h"

namespace frugal::testing {

// The ledger reconciliation: every row is a discrepancy, so it must return none.
const char* const kLedgerReconciliation =
    // Every ended attempt that a worker acknowledged is billed, once, for exactly its
    // interval, GPUs and pool; one no worker acknowledged never ran and is not billed. A
    // gang's parts are billed once its last part has ended (decision 0032).
    "SELECT 'attempt ' || a.id || ' ended without a usage entry' FROM attempts a"
    " WHERE a.ended_at IS NOT NULL AND a.acked_at IS NOT NULL AND NOT EXISTS (SELECT 1"
    "   FROM ledger_entries l WHERE l.attempt_id = a.id AND l.kind = 'usage')"
    " AND NOT EXISTS (SELECT 1 FROM attempts g WHERE g.job_id = a.job_id"
    "   AND g.number = a.number AND g.ended_at IS NULL)"
    " UNION ALL SELECT 'attempt ' || a.id || ' never acknowledged but billed' FROM attempts a"
    " WHERE a.acked_at IS NULL AND EXISTS (SELECT 1 FROM ledger_entries l"
    "   WHERE l.attempt_id = a.id)"
    " UNION ALL SELECT 'attempt ' || a.id || ' usage entry does not match the attempt'"
    " FROM attempts a JOIN ledger_entries l ON l.attempt_id = a.id AND l.kind = 'usage'"
    " JOIN nodes n ON n.id = a.node_id WHERE l.started_at <> a.started_at"
    "   OR l.ended_at <> a.ended_at OR l.origin_at <> a.started_at OR l.gpus <> a.gpus"
    "   OR l.pool_id <> n.pool_id OR l.job_id <> a.job_id"
    " UNION ALL SELECT 'ledger entry ' || l.id || ' amount ' || l.amount_micros || ' <> '"
    "   || frugal_cost_micros(l.gpus, l.rate_micros_per_gpu_hour, l.origin_at, l.started_at,"
    "   l.ended_at) FROM ledger_entries l WHERE l.amount_micros <> frugal_cost_micros(l.gpus,"
    "   l.rate_micros_per_gpu_hour, l.origin_at, l.started_at, l.ended_at)"
    // Lost work is a part of the attempt's usage, never extra money.
    " UNION ALL SELECT 'attempt ' || w.attempt_id || ' lost work outside its usage'"
    " FROM ledger_entries w JOIN ledger_entries u ON u.attempt_id = w.attempt_id"
    "   AND u.kind = 'usage' WHERE w.kind = 'lost_work' AND (w.started_at < u.started_at"
    "   OR w.ended_at > u.ended_at OR w.amount_micros > u.amount_micros)"
    // A team's total is the sum of its jobs', a job's the sum of its attempts'.
    " UNION ALL SELECT 'team ' || t.team_id || ' total ' || t.total || ' <> jobs ' || j.total"
    " FROM (SELECT team_id, sum(amount_micros) AS total FROM ledger_entries"
    "   WHERE kind = 'usage' GROUP BY team_id) t"
    " JOIN (SELECT jb.team_id, sum(x.total) AS total FROM jobs jb JOIN (SELECT job_id,"
    "   sum(amount_micros) AS total FROM ledger_entries WHERE kind = 'usage' GROUP BY job_id) x"
    "   ON x.job_id = jb.id GROUP BY jb.team_id) j ON j.team_id = t.team_id"
    " WHERE t.total <> j.total"
    " UNION ALL SELECT 'job ' || l.job_id || ' billed to team ' || l.team_id || ' not its own'"
    " FROM ledger_entries l JOIN jobs j ON j.id = l.job_id WHERE l.team_id <> j.team_id";

std::vector<std::string> CheckLedger(store::PgConn& c) {
  std::vector<std::string> problems;
  auto r = c.ExecScript(kLedgerReconciliation);
  if (!r.ok()) return {"ledger reconciliation failed to run: " + r.status().ToString()};
  for (int i = 0; i < r->rows(); ++i) problems.push_back("ledger: " + r->Text(i, 0));
  return problems;
}

std::vector<std::string> CheckInvariants(const std::string& conninfo,
                                         const std::vector<std::int64_t>& acknowledged) {
  std::vector<std::string> problems;
  auto conn = store::PgConn::Connect(conninfo);
  if (!conn.ok()) return {"cannot connect: " + conn.status().ToString()};
  store::PgConn& c = **conn;
  auto rows = [&](const std::string& sql, const std::string& what) {
    auto r = c.ExecScript(sql);
    if (!r.ok()) {
      problems.push_back(what + ": query failed: " + r.status().ToString());
      return;
    }
    for (int i = 0; i < r->rows(); ++i) problems.push_back(what + ": " + r->Text(i, 0));
  };
  std::string ids = "{";
  for (size_t i = 0; i < acknowledged.size(); ++i) {
    ids += (i ? "," : "") + std::to_string(acknowledged[i]);
  }
  ids += "}";
  rows("SELECT 'job ' || x.id || ' missing' FROM unnest('" + ids +
           "'::bigint[]) x(id) WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = x.id)",
       "lost job");
  rows("SELECT 'job ' || id || ' is ' || state FROM jobs WHERE id = ANY('" + ids +
           "'::bigint[]) AND state NOT IN ('succeeded', 'failed', 'cancelled', 'timed_out')",
       "not terminal");
  // A multi-node gang's attempt is one part per node (decision 0032): a copy is a rank.
  rows("SELECT 'job ' || job_id || ' rank ' || rank || ' has ' || count(*) ||"
       " ' active attempts' FROM attempts"
       " WHERE ended_at IS NULL GROUP BY job_id, rank HAVING count(*) > 1",
       "double run");
  rows("SELECT 'job ' || job_id || ' has active parts of attempts ' || min(number) || ' and ' ||"
       " max(number) FROM attempts WHERE ended_at IS NULL GROUP BY job_id"
       " HAVING min(number) <> max(number)",
       "double run");
  rows("SELECT 'job ' || j.id || ' (' || j.state || ') has active attempt ' || a.id FROM jobs j"
       " JOIN attempts a ON a.job_id = j.id WHERE a.ended_at IS NULL AND j.state <> 'running'",
       "orphan attempt");
  // Two attempts of one job must not overlap in time: never running in two places.
  // Two attempts of one job must not overlap in time: never running in two places. The
  // parts of one gang attempt run together by design.
  rows("SELECT 'job ' || a.job_id || ' attempts ' || a.id || ' and ' || b.id || ' overlap'"
       " FROM attempts a JOIN attempts b ON a.job_id = b.job_id AND a.id < b.id"
       " AND a.number <> b.number"
       " WHERE b.started_at < coalesce(a.ended_at, 'infinity')",
       "overlap");
  rows("SELECT 'job ' || job_id || ' checkpoint ' || id || ' went back to step ' || step FROM"
       " (SELECT id, job_id, step, lag(step) OVER (PARTITION BY job_id ORDER BY id) AS prev"
       " FROM checkpoints) k WHERE prev IS NOT NULL AND step <= prev",
       "checkpoint order");
  for (const auto& p : CheckLedger(c)) problems.push_back(p);
  return problems;
}

}  // namespace frugal::testing
