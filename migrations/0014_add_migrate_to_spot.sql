-- placement/cost moves checkpointed jobs from on-demand back to spot when spot has room
-- again and the saving outweighs the changeovers (decision 0014): a third kind of the
-- scheduler's own stops. The worker carries it out like the others: checkpoint, stop, and
-- the job is pending again for the next cycle to place on spot.
ALTER TABLE attempts DROP CONSTRAINT IF EXISTS attempts_stop_kind_check;
ALTER TABLE attempts ADD CONSTRAINT attempts_stop_kind_check
  CHECK (stop_kind IN ('priority_preemption', 'migrate_off_spot', 'migrate_to_spot'));
