-- Decision 0059: a job's team, user and array, and an event's job, are checked once per
-- statement over every row it wrote, instead of by a foreign key's check per row. A batch
-- of 10,000 jobs made 30,000 such checks (its rows' team and user, its submitted events'
-- job), each a query of its own that locks the row it finds: 108 of the batch insert's
-- 245 ms; and 10,000 calls of the array's check, most for no array at all.
--
-- What a foreign key also guaranteed, that the row it names stays, holds here by rule:
-- teams, users, arrays and jobs are never deleted (the ledger, the audit log and the events
-- name them), and a job's team, user and array never change. Both are enforced below, so a
-- reference found when its row is written holds for good.
ALTER TABLE jobs DROP CONSTRAINT jobs_team_id_fkey, DROP CONSTRAINT jobs_user_id_fkey,
                 DROP CONSTRAINT jobs_array_id_fkey;
ALTER TABLE job_events DROP CONSTRAINT job_events_job_id_fkey;

-- The same SQLSTATE as a foreign key's (23503), so a caller sees the same error class.
CREATE FUNCTION frugal_check_job_references() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing record;
BEGIN
  SELECT n.team_id, n.user_id INTO missing
    FROM (SELECT DISTINCT team_id, user_id FROM new_jobs) n
   WHERE NOT EXISTS (SELECT 1 FROM teams t WHERE t.id = n.team_id)
      OR NOT EXISTS (SELECT 1 FROM users u WHERE u.id = n.user_id)
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', MESSAGE = format(
      'jobs: team %s or user %s does not exist', missing.team_id, missing.user_id);
  END IF;
  SELECT n.array_id INTO missing
    FROM (SELECT DISTINCT array_id FROM new_jobs WHERE array_id IS NOT NULL) n
   WHERE NOT EXISTS (SELECT 1 FROM job_arrays a WHERE a.id = n.array_id)
   LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', MESSAGE = format(
      'jobs: array %s does not exist', missing.array_id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER jobs_references_exist AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_jobs
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_check_job_references();

CREATE FUNCTION frugal_check_event_jobs() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT n.job_id INTO missing FROM new_events n
   WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = n.job_id) LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', MESSAGE = format(
      'job_events: job %s does not exist', missing);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER job_events_job_exists AFTER INSERT ON job_events
  REFERENCING NEW TABLE AS new_events
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_check_event_jobs();

CREATE FUNCTION frugal_refuse_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE = format(
    '%s are never deleted: jobs, events, the ledger and the audit log name them',
    TG_TABLE_NAME);
END $$;
CREATE TRIGGER teams_never_deleted BEFORE DELETE ON teams
  FOR EACH ROW EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER teams_no_truncate BEFORE TRUNCATE ON teams
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER users_never_deleted BEFORE DELETE ON users
  FOR EACH ROW EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER users_no_truncate BEFORE TRUNCATE ON users
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER job_arrays_never_deleted BEFORE DELETE ON job_arrays
  FOR EACH ROW EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER job_arrays_no_truncate BEFORE TRUNCATE ON job_arrays
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER jobs_never_deleted BEFORE DELETE ON jobs
  FOR EACH ROW EXECUTE FUNCTION frugal_refuse_delete();
CREATE TRIGGER jobs_no_truncate BEFORE TRUNCATE ON jobs
  FOR EACH STATEMENT EXECUTE FUNCTION frugal_refuse_delete();

CREATE FUNCTION frugal_refuse_owner_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE = format(
    'job %s: a job''s team, user and array never change', OLD.id);
END $$;
CREATE TRIGGER jobs_owners_fixed BEFORE UPDATE OF team_id, user_id, array_id ON jobs
  FOR EACH ROW WHEN (OLD.team_id IS DISTINCT FROM NEW.team_id
                     OR OLD.user_id IS DISTINCT FROM NEW.user_id
                     OR OLD.array_id IS DISTINCT FROM NEW.array_id)
  EXECUTE FUNCTION frugal_refuse_owner_change();
