-- Team quotas: the most GPUs a team may hold at once, per capacity kind or per pool.
CREATE TABLE team_quotas (
  id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id       bigint NOT NULL REFERENCES teams(id),
  capacity_kind text CHECK (capacity_kind IN ('reserved', 'on_demand', 'spot')),
  pool_id       bigint REFERENCES pools(id),
  max_gpus      integer NOT NULL CHECK (max_gpus >= 0),
  CHECK ((capacity_kind IS NULL) <> (pool_id IS NULL))
);
CREATE UNIQUE INDEX team_quotas_by_kind ON team_quotas (team_id, capacity_kind)
  WHERE capacity_kind IS NOT NULL;
CREATE UNIQUE INDEX team_quotas_by_pool ON team_quotas (team_id, pool_id) WHERE pool_id IS NOT NULL;
