-- The /metrics outbox reading (issue 26, src/webhooks/outbox_gauges.ts): the oldest planned
-- delivery by one descent of its own index (the fair claim's index leads with the wallet), and the
-- held deliveries and paused webhooks, which are few, without reading every row of their tables.
create index webhook_deliveries_next_attempt_idx on webhook_deliveries (next_attempt_at)
  where next_attempt_at is not null;
create index webhook_health_paused_idx on webhook_health (wallet_id) where paused_at is not null;
create index webhook_deliveries_held_idx on webhook_deliveries (wallet_id) where held;
