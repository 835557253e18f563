-- The cost ledger: one priced usage interval per ended attempt at its pool's rate, plus the
-- part of it that was lost work (since the last checkpoint, at a preemption or node loss).
-- Money is integer micro-dollars. An interval's cost is F(end) - F(start) with
-- F(t) = floor(gpus x rate x microseconds since the attempt started / 3.6e9): splitting an
-- interval anywhere never changes the total, and every report sums the same function.

CREATE FUNCTION frugal_cost_micros(gpus integer, rate bigint, origin timestamptz,
                                   t0 timestamptz, t1 timestamptz) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT (floor(gpus::numeric * rate * (extract(epoch from (t1 - origin)) * 1000000)
                / 3600000000)
        - floor(gpus::numeric * rate * (extract(epoch from (t0 - origin)) * 1000000)
                / 3600000000))::bigint
$$;

ALTER TABLE attempts ADD COLUMN billed boolean NOT NULL DEFAULT false;
CREATE INDEX attempts_unbilled ON attempts (id) WHERE ended_at IS NOT NULL AND NOT billed;

CREATE TABLE ledger_entries (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  kind           text NOT NULL CHECK (kind IN ('usage', 'lost_work')),
  attempt_id     bigint NOT NULL REFERENCES attempts(id),
  job_id         bigint NOT NULL REFERENCES jobs(id),
  team_id        bigint NOT NULL REFERENCES teams(id),
  pool_id        bigint NOT NULL REFERENCES pools(id),
  capacity_kind  text NOT NULL CHECK (capacity_kind IN ('reserved', 'on_demand', 'spot')),
  gpus           integer NOT NULL CHECK (gpus > 0),
  origin_at      timestamptz NOT NULL,  -- the attempt's start: F's origin
  started_at     timestamptz NOT NULL CHECK (started_at >= origin_at),
  ended_at       timestamptz NOT NULL CHECK (ended_at >= started_at),
  rate_micros_per_gpu_hour bigint NOT NULL CHECK (rate_micros_per_gpu_hour >= 0),
  -- The cheapest on-demand rate for the same GPU type when billed: what spot saved.
  on_demand_rate_micros_per_gpu_hour bigint NOT NULL CHECK (on_demand_rate_micros_per_gpu_hour >= 0),
  amount_micros  bigint NOT NULL CHECK (amount_micros >= 0),
  created_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (attempt_id, kind),
  CHECK (amount_micros = frugal_cost_micros(gpus, rate_micros_per_gpu_hour, origin_at,
                                            started_at, ended_at))
);
CREATE INDEX ledger_by_team ON ledger_entries (team_id, ended_at);
CREATE INDEX ledger_by_job ON ledger_entries (job_id);
CREATE TRIGGER ledger_append_only BEFORE UPDATE OR DELETE ON ledger_entries
  FOR EACH ROW EXECUTE FUNCTION frugal_refuse_change();
CREATE TRIGGER ledger_no_truncate BEFORE TRUNCATE ON ledger_entries
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_refuse_change();
