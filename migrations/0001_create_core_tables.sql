-- Core tables: teams, users, tokens, pools, nodes, jobs, attempts, checkpoints, events.
-- Invariants live here as constraints so that no code path can break them.

CREATE TABLE teams (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name        text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id     bigint NOT NULL REFERENCES teams(id),
  name        text NOT NULL CHECK (name ~ '^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (team_id, name)
);

-- Only the SHA-256 of a token is stored; the token itself is shown once at creation.
CREATE TABLE api_tokens (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  token_sha256 text NOT NULL UNIQUE CHECK (token_sha256 ~ '^[0-9a-f]{64}$'),
  role        text NOT NULL CHECK (role IN ('admin', 'researcher', 'worker')),
  team_id     bigint NOT NULL REFERENCES teams(id),
  user_id     bigint NOT NULL REFERENCES users(id),
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

CREATE TABLE pools (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name          text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
  capacity_kind text NOT NULL CHECK (capacity_kind IN ('reserved', 'on_demand', 'spot')),
  gpu_type      text NOT NULL,
  gpu_mem_gb    integer NOT NULL CHECK (gpu_mem_gb > 0),
  speed         double precision NOT NULL DEFAULT 1 CHECK (speed > 0),
  price_micros_per_gpu_hour bigint NOT NULL CHECK (price_micros_per_gpu_hour >= 0),
  max_gpus      integer NOT NULL CHECK (max_gpus >= 0),
  provider      text NOT NULL DEFAULT 'static' CHECK (provider IN ('static', 'local', 'exec')),
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE nodes (
  id               bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name             text NOT NULL UNIQUE,
  pool_id          bigint NOT NULL REFERENCES pools(id),
  gpus             integer NOT NULL CHECK (gpus > 0),
  gpu_type         text NOT NULL,
  gpu_mem_gb       integer NOT NULL CHECK (gpu_mem_gb > 0),
  lease_epoch      bigint NOT NULL DEFAULT 1,
  lease_expires_at timestamptz NOT NULL,
  registered_at    timestamptz NOT NULL DEFAULT now(),
  state            text NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'draining', 'lost', 'gone'))
);

CREATE TABLE jobs (
  id                  bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id             bigint NOT NULL REFERENCES teams(id),
  user_id             bigint NOT NULL REFERENCES users(id),
  name                text NOT NULL DEFAULT '',
  project             text NOT NULL DEFAULT '',
  command             text[] NOT NULL CHECK (cardinality(command) >= 1),
  env                 jsonb NOT NULL DEFAULT '{}',
  working_dir         text NOT NULL DEFAULT '',
  gpus                integer NOT NULL CHECK (gpus > 0),
  gpu_types           text[] NOT NULL DEFAULT '{}',
  min_gpu_mem_gb      integer CHECK (min_gpu_mem_gb > 0),
  priority            text NOT NULL,
  priority_rank       integer NOT NULL CHECK (priority_rank >= 0),
  deadline            timestamptz,
  estimate_s          bigint CHECK (estimate_s > 0),
  max_runtime_s       bigint CHECK (max_runtime_s > 0),
  tolerance           text NOT NULL CHECK (tolerance IN ('none', 'restartable', 'checkpointed')),
  checkpoint_interval_s bigint CHECK (checkpoint_interval_s > 0),
  depends_on          bigint[] NOT NULL DEFAULT '{}',
  labels              jsonb NOT NULL DEFAULT '{}',
  max_attempts        integer NOT NULL DEFAULT 3 CHECK (max_attempts BETWEEN 1 AND 100),
  state               text NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'held', 'running', 'succeeded', 'failed',
                                       'cancelled', 'timed_out')),
  reason              text NOT NULL DEFAULT '',
  cancel_requested_at timestamptz,
  attempt_count       integer NOT NULL DEFAULT 0,
  idempotency_key     text,
  request_sha256      text,
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  started_at          timestamptz,
  finished_at         timestamptz,
  CHECK ((finished_at IS NULL) = (state IN ('pending', 'held', 'running'))),
  CHECK ((idempotency_key IS NULL) = (request_sha256 IS NULL))
);
-- A retried submit with the same key in the same team finds the first job.
CREATE UNIQUE INDEX jobs_team_idempotency_key ON jobs (team_id, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
-- The scheduler's claim order, over claimable rows only, so a cycle's cost grows with
-- the batch rather than with the history (LESSONS.md, queue speed 2).
CREATE INDEX jobs_pending_order ON jobs (priority_rank, id) WHERE state = 'pending';
CREATE INDEX jobs_team_id_desc ON jobs (team_id, id DESC);
CREATE INDEX jobs_labels ON jobs USING gin (labels jsonb_path_ops);
-- Hot-table autovacuum: claims and completions leave dead tuples at the index head.
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 20000,
                      autovacuum_vacuum_cost_delay = 0);

CREATE TABLE attempts (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id      bigint NOT NULL REFERENCES jobs(id),
  number      integer NOT NULL CHECK (number >= 1),
  node_id     bigint NOT NULL REFERENCES nodes(id),
  gpus        integer NOT NULL CHECK (gpus > 0),
  lease_epoch bigint NOT NULL,
  started_at  timestamptz NOT NULL DEFAULT now(),
  ended_at    timestamptz,
  end_reason  text CHECK (end_reason IN ('succeeded', 'failed', 'preempted', 'node_lost',
                                         'cancelled', 'timed_out')),
  exit_code   integer,
  UNIQUE (job_id, number),
  CHECK ((ended_at IS NULL) = (end_reason IS NULL)),
  CHECK (ended_at IS NULL OR ended_at >= started_at)
);
-- At most one active attempt per job: the same job never runs in two places at once.
CREATE UNIQUE INDEX attempts_one_active_per_job ON attempts (job_id) WHERE ended_at IS NULL;
CREATE INDEX attempts_active_by_node ON attempts (node_id) WHERE ended_at IS NULL;

CREATE TABLE checkpoints (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id      bigint NOT NULL REFERENCES jobs(id),
  attempt_id  bigint NOT NULL REFERENCES attempts(id),
  step        bigint NOT NULL CHECK (step >= 0),
  progress    double precision NOT NULL CHECK (progress >= 0 AND progress <= 1),
  uri         text NOT NULL CHECK (uri <> ''),
  size_bytes  bigint NOT NULL DEFAULT 0 CHECK (size_bytes >= 0),
  sha256      text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (job_id, step)
);

-- Append-only: every state transition of every job, in order.
CREATE TABLE job_events (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id      bigint NOT NULL REFERENCES jobs(id),
  at          timestamptz NOT NULL DEFAULT now(),
  kind        text NOT NULL,
  from_state  text NOT NULL DEFAULT '',
  to_state    text NOT NULL DEFAULT '',
  message     text NOT NULL DEFAULT ''
);
CREATE INDEX job_events_by_job ON job_events (job_id, id);

CREATE FUNCTION frugal_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'insufficient_privilege';
END $$;
CREATE TRIGGER job_events_append_only BEFORE UPDATE OR DELETE ON job_events
  FOR EACH ROW EXECUTE FUNCTION frugal_refuse_change();
CREATE TRIGGER job_events_no_truncate BEFORE TRUNCATE ON job_events
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_refuse_change();
