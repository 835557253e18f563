-- Fair share (decision 0028): the snapshot reads only attempts that ended since its cached
-- total was taken, through this index, instead of 56 days of attempts every cycle.
CREATE INDEX attempts_by_end ON attempts (ended_at) WHERE ended_at IS NOT NULL;
