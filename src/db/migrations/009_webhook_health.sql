-- Endpoint health of each webhook (projections/webhook_health.ts): whether it is paused and why,
-- and the streak of failed attempts that pauses it and sends its alerts.
create table webhook_health (
  wallet_id       text        not null,
  webhook_id      text        not null,
  paused_at       timestamptz,                  -- null: sending
  paused_reason   text,
  failures        integer     not null,         -- attempts failed in a row
  failing_since   timestamptz,                  -- the first failure of the streak
  last_status     integer,
  last_error      text,
  failing_alerted boolean     not null,         -- the streak's alert went out (one per episode)
  primary key (wallet_id, webhook_id)
);
