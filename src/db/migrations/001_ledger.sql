-- The append-only event log and the read models of the ledger, KV store and call logs.
-- Every table leads its primary key with wallet_id so the schema can be distributed by wallet.

create table events (
  wallet_id   text        not null,
  version     integer     not null,           -- per-wallet stream version, gapless from 1
  position    bigint      generated always as identity,
  type        text        not null,
  data        jsonb       not null,
  recorded_at timestamptz not null,
  primary key (wallet_id, version)
);
create unique index events_position_idx on events (position);

create function events_refuse_change() returns trigger language plpgsql as $$
begin
  raise exception 'events are append-only: % refused', tg_op using errcode = 'insufficient_privilege';
end $$;
create trigger events_no_update_or_delete before update or delete on events
  for each row execute function events_refuse_change();
create trigger events_no_truncate before truncate on events
  for each statement execute function events_refuse_change();

create table wallets (
  wallet_id      text        primary key,     -- SHA-256 of the token, lowercase hex
  balance        bigint      not null check (balance >= 0),
  version        integer     not null,
  created_at     timestamptz not null,
  last_used_at   timestamptz not null,
  deactivated_at timestamptz
);

create table kv_entries (
  wallet_id  text        not null,
  bucket     text        not null,
  key        text        not null,
  value      text        not null,
  expires_at timestamptz not null,
  primary key (wallet_id, bucket, key)
);
create index kv_entries_expiry_idx on kv_entries (expires_at);

create table call_logs (
  wallet_id        text        not null,
  id               text        not null,
  version          integer     not null,      -- the CallBilled event's stream version: newest first
  method           text        not null,
  path             text        not null,
  endpoint         text        not null,
  status_code      integer     not null,
  error            text,
  cost             integer     not null,
  balance          bigint      not null,
  response_time_ms integer     not null,
  at               timestamptz not null,
  expires_at       timestamptz not null,
  primary key (wallet_id, id)
);
create index call_logs_newest_idx on call_logs (wallet_id, version desc);
create index call_logs_expiry_idx on call_logs (expires_at);

create table idempotent_replies (
  wallet_id    text        not null,
  key          text        not null,
  fingerprint  text        not null,
  status       integer     not null,
  content_type text        not null,
  body         text        not null,
  cost         integer     not null,
  balance      bigint      not null,
  expires_at   timestamptz not null,
  primary key (wallet_id, key)
);
create index idempotent_replies_expiry_idx on idempotent_replies (expires_at);

-- Not wallet data: the token-creation rate limit per client address, shared by all instances.
create table token_requests (
  client_ip text        primary key,
  last_at   timestamptz not null
);

-- Service-wide settings such as the generated SERVER_SECRET.
create table service_settings (
  name  text primary key,
  value text not null
);
