-- Fair delivery slots (issue 21). The delivery worker claims due rows by wallet and endpoint, in
-- turns, instead of by due time alone: it walks the endpoints (a webhook, or an alert channel) that
-- have due rows, one index descent each however many rows each holds, and takes each one's oldest
-- due rows within its wallet's and its own share. This index serves both steps and replaces the
-- due-time index, which only that claim used.
create index webhook_deliveries_endpoint_due_idx
  on webhook_deliveries (wallet_id, (coalesce(webhook_id, kind)), next_attempt_at, created_at)
  where next_attempt_at is not null;
drop index if exists webhook_deliveries_due_idx;
-- Pausing and resuming a webhook finds its waiting emails by this one. Its condition names the
-- kind, so the claim (which reads every kind) cannot take it: with the old one, the claim of a
-- wallet with thousands of due rows could read them all and sort them for a few.
create index webhook_deliveries_waiting_idx on webhook_deliveries (wallet_id, webhook_id, created_at)
  where held or (kind = 'email' and next_attempt_at is not null);
drop index if exists webhook_deliveries_webhook_idx;

-- Recover is paced per webhook: the earliest time its next recover may queue deliveries, folded
-- from the DeliveryRequeued event that carries it (projections/webhook_health.ts).
alter table webhook_health add column recover_after timestamptz;
