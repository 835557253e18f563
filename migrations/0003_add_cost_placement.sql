-- Cost-aware placement: pool economics, spot notices for learning preemption rates, and
-- the scheduler's own stops (priority preemption, migration off spot).

ALTER TABLE pools ADD COLUMN startup_delay_s integer NOT NULL DEFAULT 0
  CHECK (startup_delay_s >= 0);
ALTER TABLE pools ADD COLUMN idle_timeout_s integer NOT NULL DEFAULT 0
  CHECK (idle_timeout_s >= 0);
-- What an admin expects before anything is observed (reclaims per node-hour); the store
-- blends it with observed notices over observed node-hours.
ALTER TABLE pools ADD COLUMN preemption_prior_per_node_hour double precision NOT NULL DEFAULT 0
  CHECK (preemption_prior_per_node_hour >= 0);

-- When the node reported a spot interruption notice (once per node).
ALTER TABLE nodes ADD COLUMN notice_at timestamptz;
UPDATE nodes SET notice_at = coalesce(last_heartbeat_at, registered_at) WHERE state = 'draining';

-- Why the scheduler stopped an attempt, for the job's history and the policy's memory.
ALTER TABLE attempts ADD COLUMN stop_kind text
  CHECK (stop_kind IN ('priority_preemption', 'migrate_off_spot'));
ALTER TABLE attempts ADD CHECK (stop_kind IS NULL OR stop_reason = 'preempted');
-- The last time a job was preempted for priority: not again before it makes progress.
ALTER TABLE jobs ADD COLUMN priority_preempted_at timestamptz;
