-- Append-only audit log of admin changes: who (token, user, team), when (database time),
-- what (action, subject) and the subject's state before and after, as JSON.
-- The application's role may only INSERT and SELECT: triggers refuse UPDATE, DELETE and
-- TRUNCATE for every role, the table owner included (REVOKE alone does not bind the
-- owner, and the scheduler usually owns its tables because it runs the migrations).
CREATE TABLE audit_log (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at         timestamptz NOT NULL DEFAULT now(),
  token_id   bigint,          -- NULL: no token (bootstrap from the command line)
  user_name  text NOT NULL,
  team_name  text NOT NULL,
  action     text NOT NULL CHECK (action ~ '^[a-z][a-z0-9_.]{0,63}$'),
  subject    text NOT NULL,
  before     jsonb,           -- NULL: the subject did not exist
  after      jsonb            -- NULL: the subject no longer exists (or was revoked)
);
CREATE INDEX audit_log_by_time ON audit_log (at, id);

CREATE FUNCTION audit_log_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'audit_log is append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$;

CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
  FOR EACH ROW EXECUTE FUNCTION audit_log_refuse_change();
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION audit_log_refuse_change();

REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM PUBLIC;
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM CURRENT_USER;
