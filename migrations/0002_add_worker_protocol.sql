-- Worker protocol: delivery acknowledgements, stop orders, retry backoff, logs, GPU stats.

ALTER TABLE jobs ADD COLUMN failures integer NOT NULL DEFAULT 0 CHECK (failures >= 0);
-- A failed job waits for its retry backoff before it is placed again.
ALTER TABLE jobs ADD COLUMN not_before timestamptz;

-- Set when the worker first reports the attempt as running: never deliver it again.
ALTER TABLE attempts ADD COLUMN acked_at timestamptz;
-- The scheduler's own order to stop an attempt (e.g. preempted for a higher priority).
ALTER TABLE attempts ADD COLUMN stop_reason text CHECK (stop_reason IN ('preempted', 'cancelled'));
ALTER TABLE attempts ADD COLUMN log_bytes bigint NOT NULL DEFAULT 0;
ALTER TABLE attempts ADD COLUMN log_dropped_bytes bigint NOT NULL DEFAULT 0;

ALTER TABLE nodes ADD COLUMN last_heartbeat_at timestamptz;
ALTER TABLE nodes ADD COLUMN gpu_stats jsonb NOT NULL DEFAULT '[]';

CREATE TABLE attempt_logs (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id      bigint NOT NULL REFERENCES jobs(id),
  attempt_id  bigint NOT NULL REFERENCES attempts(id),
  data        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX attempt_logs_by_job ON attempt_logs (job_id, id);
