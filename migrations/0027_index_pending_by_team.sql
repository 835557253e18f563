-- Decision 0035: each cycle reads every team's first jobs in claim order (a window per
-- team), not the first 10,000 of the whole queue. One probe per team with pending work
-- walks this index and stops at the window.
CREATE INDEX jobs_pending_by_team ON jobs (team_id, priority_rank, id) WHERE state = 'pending';
-- And a team's pending jobs that have dependencies, which the window reads apart (a
-- pipeline's waiting tail takes none of the places of the jobs that may start).
CREATE INDEX jobs_pending_with_deps ON jobs (team_id, priority_rank, id)
  WHERE state = 'pending' AND cardinality(depends_on) > 0;
