-- Decision 0032 (multi-node gangs): a job asks for `nodes` nodes, its `gpus` split evenly
-- over them. One attempt of a gang is one row per node, told apart by `rank`; all of them
-- share the attempt's `number`. A part of rank 0 is the gang's master.
ALTER TABLE jobs ADD COLUMN nodes int NOT NULL DEFAULT 1
  CHECK (nodes BETWEEN 1 AND 64 AND gpus % nodes = 0);

ALTER TABLE attempts ADD COLUMN rank int NOT NULL DEFAULT 0 CHECK (rank >= 0);
ALTER TABLE attempts ADD COLUMN gang_size int NOT NULL DEFAULT 1
  CHECK (gang_size BETWEEN 1 AND 64 AND rank < gang_size);
-- When the part's own node said it is going (a reclaim notice or a shutdown) while it ran:
-- its end then explains its peers' (decision 0032).
ALTER TABLE attempts ADD COLUMN noticed_at timestamptz;
ALTER TABLE attempts DROP CONSTRAINT attempts_job_id_number_key;
ALTER TABLE attempts ADD CONSTRAINT attempts_job_id_number_rank_key UNIQUE (job_id, number, rank);
-- Never two live copies: of a single-node job, or of any one rank of a gang.
DROP INDEX attempts_one_active_per_job;
CREATE UNIQUE INDEX attempts_one_active_per_rank ON attempts (job_id, rank) WHERE ended_at IS NULL;

-- Where the node's peers reach it (the gang's rendezvous address).
ALTER TABLE nodes ADD COLUMN address text NOT NULL DEFAULT ''
  CHECK (length(address) <= 255);
