-- Scheduled webhooks: the schedule read model and the scheduler's claims on due runs.
-- Every table leads its primary key with wallet_id so the schema can be distributed by wallet.

-- Read model of the webhook events and the run events (projections/schedules.ts): one row per
-- scheduled webhook, with its plan and the outcome of its last run.
create table schedules (
  wallet_id        text        not null,
  webhook_id       text        not null,
  cron             text        not null,
  timezone         text        not null,
  active           boolean     not null,
  next_run_at      timestamptz,               -- null: paused (or a cron that cannot be planned)
  handled_through  timestamptz,               -- planned times up to here were dealt with: never planned again
  last_run_at      timestamptz,
  last_status      text,                      -- success | failure; null before the first outcome
  last_error       text,
  last_delivery_id text,                      -- the outbox row of the last run, whose attempt sets the status
  primary key (wallet_id, webhook_id)
);
create index schedules_due_idx on schedules (next_run_at) where next_run_at is not null;

-- A scheduler instance's claim on one planned time of one schedule (src/schedules/claims.ts). The
-- key admits one live claim per planned time across instances; the run's transaction deletes it,
-- and a claim left by a crashed instance is taken over when its lease runs out.
create table schedule_claims (
  wallet_id     text        not null,
  webhook_id    text        not null,
  planned_at    timestamptz not null,
  claim_token   text        not null,
  claimed_until timestamptz not null,
  primary key (wallet_id, webhook_id, planned_at)
);
create index schedule_claims_lease_idx on schedule_claims (claimed_until);
