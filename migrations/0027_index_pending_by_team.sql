-- Decision 0035: each cycle reads every team's first jobs in claim order (a window per
-- team), not the first 10,000 of the whole queue. One probe per team with pending work
-- walks this index and stops at the window.
CREATE INDEX jobs_pending_by_team ON jobs (team_id, priority_rank, id) WHERE state = 'pending';
