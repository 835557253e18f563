-- A fourth token role, `metrics`: it may read GET /metrics and nothing else, so a
-- Prometheus scraper never holds an admin token.
ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_role_check;
ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_role_check
  CHECK (role IN ('admin', 'researcher', 'worker', 'metrics'));
