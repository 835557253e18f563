-- Guardrails (issue 5): max_runtime per priority class, admin approval of big premium
-- requests, idle GPU reclamation and right-sizing advice (docs/decisions/0012-guardrails.md).

-- One row of cluster-wide settings. Approval is off while premium_gpu_types is empty.
CREATE TABLE guardrail_settings (
  id                       boolean PRIMARY KEY DEFAULT true CHECK (id),
  premium_gpu_types        text[] NOT NULL DEFAULT '{}',
  -- A job asking more than this many GPUs that may run on a premium type waits for approval.
  approval_above_gpus      integer NOT NULL DEFAULT 8 CHECK (approval_above_gpus >= 0),
  idle_threshold_percent   integer NOT NULL DEFAULT 5
                           CHECK (idle_threshold_percent BETWEEN 1 AND 100),
  idle_window_s            bigint NOT NULL DEFAULT 1800 CHECK (idle_window_s >= 1)
);
INSERT INTO guardrail_settings DEFAULT VALUES;

-- max_runtime per priority class: the default given to a job that sets none, and the most a
-- job may ask. NULL: no default / no maximum.
CREATE TABLE priority_class_runtimes (
  priority       text PRIMARY KEY,
  default_max_runtime_s bigint CHECK (default_max_runtime_s > 0),
  max_max_runtime_s     bigint CHECK (max_max_runtime_s > 0),
  CHECK (default_max_runtime_s IS NULL OR max_max_runtime_s IS NULL
         OR default_max_runtime_s <= max_max_runtime_s)
);

-- What happens to a team's job whose GPUs stay idle: a warning event, or also a requeue.
ALTER TABLE teams ADD COLUMN idle_policy text NOT NULL DEFAULT 'warn'
  CHECK (idle_policy IN ('warn', 'requeue'));

-- Held until an admin approves (other holds, e.g. budgets or dependencies, leave it false).
ALTER TABLE jobs ADD COLUMN awaiting_approval boolean NOT NULL DEFAULT false;

-- Heartbeat samples per attempt, in database time: the peak GPU memory (MiB, the busiest
-- GPU of the attempt), since when every GPU of it has been under the idle threshold (NULL
-- while busy or unknown), and when it was warned (once per attempt).
ALTER TABLE attempts ADD COLUMN peak_gpu_mem_mb integer CHECK (peak_gpu_mem_mb >= 0);
ALTER TABLE attempts ADD COLUMN idle_since timestamptz;
ALTER TABLE attempts ADD COLUMN idle_warned_at timestamptz;

-- When the idle guardrail ordered the attempt stopped: a requeue (stop_reason preempted) of
-- a checkpointed job, or a stop (stop_reason cancelled) of one that never checkpointed. A
-- column of its own rather than a stop_kind value, so that it does not depend on (or fight
-- over) the stop_kind CHECK that placement migrations redefine.
ALTER TABLE attempts ADD COLUMN idle_stopped_at timestamptz;
