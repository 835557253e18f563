-- Decision 0051: each attempt carries its job's team, so fair share sums attempts by team
-- without a lookup of the job per attempt. The cycle's read of what ended since the last
-- fold (a few hundred attempts in a busy drain) did one such lookup per row. A job's team
-- never changes; the statement that starts attempts (ApplyPlan) copies it from the job row
-- it has just updated.
ALTER TABLE attempts ADD COLUMN team_id bigint;
UPDATE attempts a SET team_id = j.team_id FROM jobs j WHERE j.id = a.job_id;
ALTER TABLE attempts ALTER COLUMN team_id SET NOT NULL;
