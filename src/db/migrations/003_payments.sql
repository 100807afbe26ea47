-- Confirmed payments, one row per provider event: what makes a replayed confirmation a no-op.
create table payments (
  wallet_id  text        not null,
  payment_id text        not null,
  tier       text        not null,
  amount     bigint      not null,
  paid_at    timestamptz not null,
  primary key (wallet_id, payment_id)
);
