-- Issue 17: the capacity figures count what exists and is paid for, and priority
-- preemption's protection window is a per-class setting.

-- Reserved pools: GPUs paid for whether used or not (a commitment). 0: the GPUs of the
-- pool's registered nodes are what is paid for. max_gpus stays how far a pool may grow.
ALTER TABLE pools ADD COLUMN committed_gpus integer NOT NULL DEFAULT 0
  CHECK (committed_gpus >= 0 AND (committed_gpus = 0 OR capacity_kind = 'reserved'));

-- A running job of this class is not preempted by priority before it has run this long.
-- NULL: the scheduler's default (10 minutes).
ALTER TABLE priority_class_runtimes ADD COLUMN min_run_time_s bigint CHECK (min_run_time_s >= 0);
