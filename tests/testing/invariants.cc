#include "tests/testing/invariants.h"

#include "scheduler/store/pg/pg_conn.h"

namespace frugal::testing {

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
  rows("SELECT 'job ' || job_id || ' has ' || count(*) || ' active attempts' FROM attempts"
       " WHERE ended_at IS NULL GROUP BY job_id HAVING count(*) > 1",
       "double run");
  rows("SELECT 'job ' || j.id || ' (' || j.state || ') has active attempt ' || a.id FROM jobs j"
       " JOIN attempts a ON a.job_id = j.id WHERE a.ended_at IS NULL AND j.state <> 'running'",
       "orphan attempt");
  // Two attempts of one job must not overlap in time: never running in two places.
  rows("SELECT 'job ' || a.job_id || ' attempts ' || a.id || ' and ' || b.id || ' overlap'"
       " FROM attempts a JOIN attempts b ON a.job_id = b.job_id AND a.id < b.id"
       " WHERE b.started_at < coalesce(a.ended_at, 'infinity')",
       "overlap");
  rows("SELECT 'job ' || job_id || ' checkpoint ' || id || ' went back to step ' || step FROM"
       " (SELECT id, job_id, step, lag(step) OVER (PARTITION BY job_id ORDER BY id) AS prev"
       " FROM checkpoints) k WHERE prev IS NOT NULL AND step <= prev",
       "checkpoint order");
  return problems;
}

}  // namespace frugal::testing
