-- Idle requeues per job (decision 0012, amended): the idle guardrail requeues a
-- checkpointed job whose GPUs sat idle for the window, once; a job idle again after that is
-- likely stuck, and is stopped instead of being requeued every window. The count lives on
-- the job so the cycle's snapshot reads it without scanning the job's attempts.
ALTER TABLE jobs ADD COLUMN idle_requeues integer NOT NULL DEFAULT 0;
