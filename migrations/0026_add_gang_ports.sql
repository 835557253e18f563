-- Decision 0032: the port rank 0 of a gang listens on for its rendezvous, on every part of
-- the attempt. Chosen when the gang starts so that no two live gangs whose masters share a
-- node share a port (a hash of the job and attempt clashed once in 10,000).
ALTER TABLE attempts ADD COLUMN master_port int CHECK (master_port BETWEEN 1024 AND 65535);
-- Gangs live at upgrade keep the port their parts were told (the old hash).
UPDATE attempts SET master_port = 20000 + ((job_id * 1000003 + number) % 10000)::int
  WHERE gang_size > 1 AND ended_at IS NULL;
