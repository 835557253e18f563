-- Decision 0040: since decision 0035 the cycle reads each team's pending jobs through
-- jobs_pending_by_team, and nothing else reads pending jobs in the whole queue's claim
-- order. Once statistics said one team held most pending jobs, the planner preferred this
-- index filtered by team, reading the whole queue for every other team at every cycle.
-- Every insert and every start also paid for keeping it.
DROP INDEX IF EXISTS jobs_pending_order;
