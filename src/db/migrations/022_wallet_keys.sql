-- Issue 23: each wallet's data key, wrapped (AES-256-GCM) by the master key named in
-- master_key_id. Erasing the wallet sets wrapped_key to null and erased_at: its sealed event
-- fields can never be opened again (crypto-shredding), while the row keeps a new key from being
-- made for it. Rotation re-wraps row by row; master_key_id tells which rows are done.
create table wallet_keys (
  wallet_id     text        primary key,
  wrapped_key   text,
  master_key_id text,
  created_at    timestamptz not null default now(),
  erased_at     timestamptz,
  check ((wrapped_key is null) = (erased_at is not null)),
  check ((wrapped_key is null) = (master_key_id is null))
);
create index wallet_keys_master_idx on wallet_keys (master_key_id) where wrapped_key is not null;
