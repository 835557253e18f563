-- High availability that covers hangs (issue 17, decision 0020): leadership is a lease in
-- database time with a fencing term, instead of a session advisory lock that a frozen
-- leader keeps for as long as its connection lives.
--
-- One row. `term` grows by one at every takeover; `holder` is the random instance id of
-- the scheduler that holds it; `expires_at` is database time. A scheduler takes the lease
-- only when it has expired, renews it every cycle, and every engine write transaction
-- first checks (term, holder, expires_at > clock_timestamp()) on this row FOR SHARE, so a
-- leader that lost its term writes nothing.
CREATE TABLE leader_lease (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  term bigint NOT NULL DEFAULT 0 CHECK (term >= 0),
  holder text,
  acquired_at timestamptz,
  expires_at timestamptz NOT NULL DEFAULT '-infinity'
);
INSERT INTO leader_lease DEFAULT VALUES;
