-- Issue 19 (decision 0026): job arrays. One request makes an array of tasks; each task is
-- an ordinary job (placed, billed, preempted as one) that knows its array and index.
CREATE TABLE job_arrays (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id         bigint NOT NULL REFERENCES teams(id),
  user_id         bigint NOT NULL REFERENCES users(id),
  name            text NOT NULL DEFAULT '',
  first_index     integer NOT NULL CHECK (first_index >= 0),
  last_index      integer NOT NULL CHECK (last_index >= first_index),
  step            integer NOT NULL CHECK (step > 0),
  task_count      integer NOT NULL CHECK (task_count BETWEEN 1 AND 10000),
  -- At most this many tasks run at once (`--array 0-99%4`); NULL: no limit.
  max_running     integer CHECK (max_running > 0),
  idempotency_key text,
  request_sha256  text,
  created_at      timestamptz NOT NULL DEFAULT now(),
  CHECK ((idempotency_key IS NULL) = (request_sha256 IS NULL))
);
CREATE UNIQUE INDEX job_arrays_team_idempotency_key ON job_arrays (team_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- Throttled arrays with work left: what the snapshot looks at every cycle.
CREATE INDEX job_arrays_throttled ON job_arrays (id) WHERE max_running IS NOT NULL;

ALTER TABLE jobs ADD COLUMN array_id bigint REFERENCES job_arrays(id),
                 ADD COLUMN array_index integer,
                 ADD CONSTRAINT jobs_array_task CHECK ((array_id IS NULL) = (array_index IS NULL));
CREATE UNIQUE INDEX jobs_array_index ON jobs (array_id, array_index) WHERE array_id IS NOT NULL;
-- The throttle: an array's pending tasks in index order, and its running ones.
CREATE INDEX jobs_array_pending ON jobs (array_id, array_index)
  WHERE state = 'pending' AND array_id IS NOT NULL;
CREATE INDEX jobs_array_running ON jobs (array_id) WHERE state = 'running' AND array_id IS NOT NULL;
