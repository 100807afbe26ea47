-- Webhooks: the registry read model, the delivery outbox and stored attachments.
-- Every table leads its primary key with wallet_id so the schema can be distributed by wallet.

-- Read model of WebhookCreated / WebhookUpdated / WebhookDeleted (projections/webhooks.ts).
create table webhooks (
  wallet_id           text        not null,
  webhook_id          text        not null,
  url                 text        not null,
  headers             jsonb       not null,
  format              text,                     -- null: the raw email payload
  template            jsonb,                    -- custom format only
  options             jsonb       not null,
  include_attachments boolean     not null,
  schedule_cron       text,                     -- set: a scheduled webhook
  schedule_timezone   text,
  schedule_active     boolean,
  email               text,                     -- mailbox address, kept while scheduled
  secret              text        not null,     -- Standard Webhooks signing key
  created_at          timestamptz not null,
  primary key (wallet_id, webhook_id)
);
-- SMTP looks a mailbox up by its address alone. (On a distributed engine this becomes a small
-- reference table address -> wallet, since a unique index must contain the distribution column.)
create unique index webhooks_email_idx on webhooks (email);
create index webhooks_creation_idx on webhooks (wallet_id, created_at);

-- The delivery outbox (src/webhooks/outbox.ts): written in the transaction that accepted the email
-- or fired the run, claimed by workers with FOR UPDATE SKIP LOCKED and a lease.
create table webhook_deliveries (
  wallet_id       text        not null,
  id              text        not null,
  webhook_id      text        not null,
  kind            text        not null,         -- email | scheduled | alert
  payload         jsonb       not null,
  message_id      text        not null,         -- webhook-id header, the same on every retry
  cost            integer     not null,         -- what the cause was charged, shown on attempt 1
  attempts        integer     not null default 0,
  next_attempt_at timestamptz not null,
  locked_until    timestamptz,                  -- a worker's lease; past it, another may claim
  claim_token     text,
  created_at      timestamptz not null,
  primary key (wallet_id, id)
);
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at);

-- Files handed out under signed links (src/attachments/store.ts): email attachments and the
-- sample attachment of test deliveries. Kept 7 days, then swept.
create table attachments (
  wallet_id    text        not null,
  id           text        not null,
  filename     text        not null,
  content_type text        not null,
  size         integer     not null,
  content      bytea       not null,
  created_at   timestamptz not null,
  expires_at   timestamptz not null,
  primary key (wallet_id, id)
);
create index attachments_expiry_idx on attachments (expires_at);
