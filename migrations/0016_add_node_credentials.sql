-- Multi-tenant safety (issue 15, decision 0019): node-bound worker credentials and
-- unguessable attempt fences.

-- A node's own credential, issued at registration in exchange for a join token (a worker
-- role token). Only its SHA-256 is kept; registering again replaces it, so an old
-- credential stops working at once.
ALTER TABLE nodes ADD COLUMN credential_sha256 text UNIQUE;
ALTER TABLE nodes ADD COLUMN credential_issued_at timestamptz;

-- Each attempt's fencing token: 256 bits from PostgreSQL's strong random source (two
-- version-4 UUIDs give 244 random bits; the hex text is 64 characters). Every worker
-- report about the attempt must present it, with the node's credential and lease epoch.
-- It is kept in clear because the assignment is re-sent until acknowledged; it is worth
-- nothing without the node credential, which is stored hashed.
CREATE FUNCTION frugal_new_fence() RETURNS text LANGUAGE sql VOLATILE AS
  $$ SELECT replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', '') $$;
ALTER TABLE attempts ADD COLUMN fence text NOT NULL DEFAULT frugal_new_fence()
  CHECK (length(fence) = 64);
