-- Why a leader term has ended, in one place: the fence's refusal (migration 0031) and the
-- scheduler's log line when a renewal finds its term gone (PgStore::LostReason) both read
-- it from here, so the two can never word it differently.
CREATE FUNCTION frugal_leader_lost_reason(p_term bigint) RETURNS text LANGUAGE sql AS $$
  SELECT CASE WHEN l.term IS NULL THEN 'lease row unreadable'
              WHEN l.term <> p_term THEN format('taken over: term %s held by %s', l.term,
                                                coalesce(l.holder, ''))
              ELSE 'lease expired before renewal' END
    FROM (SELECT 1) one LEFT JOIN leader_lease l ON true
$$;

CREATE OR REPLACE FUNCTION frugal_leader_fence(p_term bigint, p_holder text, idle_ms text)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM leader_lease WHERE term = p_term AND holder = p_holder
    AND expires_at > clock_timestamp() FOR SHARE;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = 'FR001', MESSAGE = format(
      'not the leader: term %s has ended (%s); nothing was written', p_term,
      frugal_leader_lost_reason(p_term));
  END IF;
  PERFORM set_config('idle_in_transaction_session_timeout', idle_ms, true);
  RETURN true;
END $$;
