-- Scoped keys (issue 15): the read model of KeyCreated / KeyRevoked and of the CallBilled events
-- that carry a keyId (projections/scoped_keys.ts), and the key of each call in the call log.

create table scoped_keys (
  wallet_id    text        not null,
  key_id       text        not null,
  name         text        not null,
  key_hash     text        not null,     -- SHA-256 of the key, lowercase hex; the key itself is never stored
  scope        text        not null,     -- read | write
  buckets      text[],                   -- null: every bucket
  spend_cap    bigint,                   -- credits over the key's life; null: no cap
  expires_at   timestamptz,              -- null: never
  created_at   timestamptz not null,
  spent        bigint      not null,     -- credits its calls were charged
  last_used_at timestamptz,
  revoked_at   timestamptz,
  primary key (wallet_id, key_id)
);
-- A call presents the key alone, so it is looked up by its hash across wallets, like a mailbox by
-- its address. (On a distributed engine this becomes a small reference table hash -> wallet and
-- key id, since a unique index must contain the distribution column.)
create unique index scoped_keys_hash_idx on scoped_keys (key_hash);

-- Which key made the call; null: the wallet token (and deliveries, payments).
alter table call_logs add column key_id text;
