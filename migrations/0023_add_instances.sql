-- Issue 18 (decision 0029): the instances the `exec` provider made (or found leaked) in a
-- cloud, one row per instance, kept after it ends. The provider's reconciling reads the
-- rows that have not ended; what each instance cost is F over [created_at, ended_at] at its
-- GPUs and the pool's rate when it was created (the same function as the ledger), so the
-- bill Frugal shows can be held against the cloud's.
CREATE TABLE instances (
  id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  pool_id      bigint NOT NULL REFERENCES pools(id),
  node_name    text NOT NULL,
  instance_id  text CHECK (instance_id ~ '^[!-~]{1,255}$'),  -- NULL while `create` runs
  -- creating: `create` runs; booting: it printed an id, the node has not registered;
  -- running: the node registered; destroying: `destroy` asked for; gone: ended.
  state        text NOT NULL CHECK (state IN ('creating', 'booting', 'running', 'destroying', 'gone')),
  leaked       boolean NOT NULL DEFAULT false,  -- found by `list`, never created by us
  gpus         integer NOT NULL CHECK (gpus > 0),
  rate_micros_per_gpu_hour bigint NOT NULL CHECK (rate_micros_per_gpu_hour >= 0),
  requested_at timestamptz NOT NULL DEFAULT now(),
  created_at   timestamptz,  -- `create` returned the id (or `list` first showed a leak)
  registered_at timestamptz,
  ended_at     timestamptz CHECK (ended_at >= requested_at),
  -- Why it ended or is ending: idle, boot_timeout, node_lost, leak, vanished (the cloud
  -- took it: a reclaim), stockout, create_failed.
  reason       text NOT NULL DEFAULT '',
  detail       text NOT NULL DEFAULT '',  -- the command's last words on a failure
  -- The instance's own join token: it registers node_name only, once (revoked then, or
  -- when the instance ends), so a job that reads it from instance metadata gains nothing.
  join_token_id bigint REFERENCES api_tokens(id),
  CHECK ((state = 'gone') = (ended_at IS NOT NULL))
);
-- A node name names one instance that is not gone; instance ids are unique within a pool.
CREATE UNIQUE INDEX instances_live_node ON instances (node_name) WHERE state <> 'gone';
CREATE UNIQUE INDEX instances_by_cloud_id ON instances (pool_id, instance_id)
  WHERE instance_id IS NOT NULL AND state <> 'gone';
CREATE INDEX instances_not_gone ON instances (pool_id) WHERE state <> 'gone';
