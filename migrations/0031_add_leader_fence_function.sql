-- Decision 0054: the leader fence as a function that raises when this process does not hold
-- the current, unexpired term. The engine sends its writes in the same pipeline right
-- behind the fence; an error aborts the rest of the pipeline, so a deposed leader writes
-- nothing and takes no lock. SQLSTATE FR001 (class FR: Frugal's own conditions) comes back
-- as FailedPrecondition with the message as written here, which is NotLeader's form.
-- When the term is held, the row stays locked FOR SHARE to commit and the transaction's
-- idle_in_transaction_session_timeout is set to `idle_ms` (decision 0048).
CREATE FUNCTION frugal_leader_fence(p_term bigint, p_holder text, idle_ms text)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
  now_term bigint;
  now_holder text;
BEGIN
  PERFORM 1 FROM leader_lease WHERE term = p_term AND holder = p_holder
    AND expires_at > clock_timestamp() FOR SHARE;
  IF NOT FOUND THEN
    SELECT term, coalesce(holder, '') INTO now_term, now_holder FROM leader_lease;
    RAISE EXCEPTION USING ERRCODE = 'FR001', MESSAGE = format(
      'not the leader: term %s has ended (%s); nothing was written', p_term,
      CASE WHEN now_term IS NULL THEN 'lease row unreadable'
           WHEN now_term <> p_term THEN format('taken over: term %s held by %s', now_term, now_holder)
           ELSE 'lease expired before renewal' END);
  END IF;
  PERFORM set_config('idle_in_transaction_session_timeout', idle_ms, true);
  RETURN true;
END $$;
