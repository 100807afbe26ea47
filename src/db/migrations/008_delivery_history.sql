-- Deliveries a user can see and fix. The outbox keeps each delivery's payload after its last
-- attempt, with the body last sent and the receiver's answers, for 7 days; the delivery history is
-- the read model of their status, folded from the delivery events (projections/delivery_history.ts).
-- Both are partitioned by expiry, so finished deliveries leave with whole partitions
-- (src/db/partitions.ts), and both keys lead with wallet_id and hold the partition column.

alter table webhook_deliveries rename to webhook_deliveries_unpartitioned;
alter index webhook_deliveries_pkey rename to webhook_deliveries_unpartitioned_pkey;
drop index webhook_deliveries_due_idx;

create table webhook_deliveries (
  wallet_id       text        not null,
  id              text        not null,
  webhook_id      text,                         -- null: an alert, which goes to the wallet's alert target
  kind            text        not null,         -- email | scheduled | alert_webhook | alert_email | test
  payload         jsonb       not null,
  message_id      text        not null,         -- webhook-id header, the same on every attempt
  cost            integer     not null,         -- what the cause was charged, shown on attempt 1
  attempts        integer     not null default 0,
  next_attempt_at timestamptz,                  -- null: nothing planned (finished, or held)
  held            boolean     not null default false,  -- waits for its paused webhook to resume
  locked_until    timestamptz,                  -- a worker's lease; past it, another may claim
  claim_token     text,
  created_at      timestamptz not null,
  expires_at      timestamptz not null,         -- created_at + 7 days: the row leaves with its partition
  sent_body       text,                         -- the JSON body of the last attempt, as sent
  responses       jsonb       not null default '[]',  -- [{attemptId, excerpt}] of the last attempts
  primary key (wallet_id, id, expires_at)
) partition by range (expires_at);
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at, created_at)
  where next_attempt_at is not null;
create index webhook_deliveries_webhook_idx on webhook_deliveries (wallet_id, webhook_id, created_at)
  where next_attempt_at is not null or held;
create table webhook_deliveries_default partition of webhook_deliveries default;

insert into webhook_deliveries (wallet_id, id, webhook_id, kind, payload, message_id, cost, attempts,
                                next_attempt_at, locked_until, claim_token, created_at, expires_at)
select wallet_id, id, webhook_id, kind, payload, message_id, cost, attempts, next_attempt_at, locked_until,
       claim_token, created_at, created_at + interval '7 days'
from webhook_deliveries_unpartitioned;
drop table webhook_deliveries_unpartitioned;

create table delivery_history (
  wallet_id       text        not null,
  delivery_id     text        not null,         -- the outbox row
  webhook_id      text        not null,
  kind            text        not null,         -- email | scheduled | test
  message_id      text,                         -- the webhook-id header: the id the API shows
  created_at      timestamptz not null,
  status          text        not null,         -- pending | delivered | failed | abandoned
  attempts        jsonb       not null,         -- [{attemptId, at, statusCode, latencyMs, error}]
  next_attempt_at timestamptz,
  expires_at      timestamptz not null,
  primary key (wallet_id, delivery_id, expires_at)
) partition by range (expires_at);
create index delivery_history_newest_idx on delivery_history (wallet_id, webhook_id, created_at desc, delivery_id desc);
create index delivery_history_message_idx on delivery_history (wallet_id, message_id);
create table delivery_history_default partition of delivery_history default;
