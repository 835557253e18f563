-- Dependencies of two kinds: `after` (run when the dependency succeeded; held with the reason
-- if it did not) and `after_any` (run when it ended, whatever the outcome). depends_on keeps
-- every dependency; depends_on_any marks those of the second kind.
ALTER TABLE jobs ADD COLUMN depends_on_any bigint[] NOT NULL DEFAULT '{}'
  CHECK (depends_on_any <@ depends_on);
