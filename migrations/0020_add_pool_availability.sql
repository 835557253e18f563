-- Issue 14 (decision 0023): each spot pool's learned availability model, a semi-Markov
-- chain of spell ages (scheduler/model/availability.h). The evidence is counts per
-- (up or down, age bin), as JSON text of AvailabilityModel (180 s ticks, 8 bins); counts
-- add, so the fitted model is the imported counts plus those observed from node lives.
-- The observed spells themselves are derived from the nodes table at each refit
-- (registered_at, notice_at, last_heartbeat_at), so nothing new is recorded per node.
CREATE TABLE pool_availability (
  pool_id          bigint PRIMARY KEY REFERENCES pools(id),
  -- An admin's import (`frugal admin pool history import`): the counts of the series,
  -- what it was (file, zone, column, step) and when. NULL: nothing imported.
  imported_counts  text,
  imported_source  text,
  imported_at      timestamptz,
  imported_ticks   double precision NOT NULL DEFAULT 0 CHECK (imported_ticks >= 0),
  -- The last refit (background, never in the scheduling cycle): imported + observed
  -- counts. NULL until the first refit; the policy then has no model for the pool.
  fitted_model     text,
  fitted_at        timestamptz,
  observed_ticks   double precision NOT NULL DEFAULT 0 CHECK (observed_ticks >= 0),
  refit_ms         double precision  -- how long the last refit of this pool took
);
