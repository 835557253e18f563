-- Decision 0023 (stockouts and released nodes as availability evidence): the refit and
-- every cycle's snapshot read a spot pool's stockouts since its last node life ended, and
-- each node's latest instance (was it destroyed as idle?).
CREATE INDEX instances_stockouts ON instances (pool_id, ended_at) WHERE reason = 'stockout';
CREATE INDEX instances_by_node ON instances (node_name, id);
