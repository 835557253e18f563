-- Team budgets (decision 0010): money per UTC calendar period, alert thresholds, a hard
-- flag and an optional webhook. Alerts are rows, unique per (team, period, threshold), so
-- each fires once however many schedulers evaluate it; each row carries its webhook
-- delivery state so a POST that fails is retried, never lost.
CREATE TABLE team_budgets (
  team_id       bigint PRIMARY KEY REFERENCES teams(id),
  period        text NOT NULL CHECK (period IN ('monthly', 'weekly')),
  limit_micros  bigint NOT NULL CHECK (limit_micros > 0),
  alert_at_pct  integer[] NOT NULL DEFAULT '{}'
                CHECK (1 <= ALL (alert_at_pct) AND 100 >= ALL (alert_at_pct)),
  hard          boolean NOT NULL DEFAULT false,
  webhook_url   text,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE budget_alerts (
  id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  team_id           bigint NOT NULL REFERENCES teams(id),
  period_start      timestamptz NOT NULL,
  threshold_pct     integer NOT NULL CHECK (threshold_pct BETWEEN 1 AND 100),
  limit_micros      bigint NOT NULL,
  used_micros       bigint NOT NULL,
  fired_at          timestamptz NOT NULL DEFAULT now(),
  payload           jsonb NOT NULL,  -- the webhook body, fixed when it fired
  webhook_url       text,
  delivery_state    text NOT NULL
                    CHECK (delivery_state IN ('none', 'pending', 'delivered', 'failed')),
  delivery_attempts integer NOT NULL DEFAULT 0,
  next_delivery_at  timestamptz,
  delivered_at      timestamptz,
  last_error        text,
  UNIQUE (team_id, period_start, threshold_pct)
);
CREATE INDEX budget_alerts_due ON budget_alerts (next_delivery_at)
  WHERE delivery_state = 'pending';

-- What an attempt was expected to cost when it was admitted: until it ends, the budget
-- counts whichever is larger, this or what it has cost so far.
ALTER TABLE attempts ADD COLUMN expected_cost_micros bigint NOT NULL DEFAULT 0
  CHECK (expected_cost_micros >= 0);
