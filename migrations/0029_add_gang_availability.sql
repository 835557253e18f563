-- Decision 0032 (amended 2026-11-28): a spot pool's availability for a multi-node gang of
-- `nodes` nodes ("all N up", as experiment 3 counts a series of N instances): the spells
-- in which at least that many of its nodes were alive at once, fitted at each refit from
-- the same node lives as pool_availability.fitted_model, for the gang sizes that jobs not
-- yet ended ask for. No import: an imported series says whether one instance could be had.
CREATE TABLE pool_gang_availability (
  pool_id         bigint NOT NULL REFERENCES pools(id),
  nodes           int NOT NULL CHECK (nodes > 1),
  fitted_model    text NOT NULL,  -- JSON text of AvailabilityModel, as fitted_model
  fitted_at       timestamptz NOT NULL,
  observed_ticks  double precision NOT NULL DEFAULT 0 CHECK (observed_ticks >= 0),
  PRIMARY KEY (pool_id, nodes)
);
