-- Nodes are first-class (issue 17, decision 0021): an administrator's drain, kept apart
-- from the worker's own drain (nodes.state = 'draining' with notice_at for a spot notice,
-- without it for a worker shutting down).
--
-- An admin drain: no new placements on the node, running attempts continue. Only an admin
-- undrain clears it; a withdrawn spot notice or a re-registration does not.
ALTER TABLE nodes ADD COLUMN drained_at timestamptz;
ALTER TABLE nodes ADD COLUMN drained_by text;
ALTER TABLE nodes ADD CHECK ((drained_at IS NULL) = (drained_by IS NULL));
