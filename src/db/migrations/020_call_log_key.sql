-- Issue 22: one index on call_logs instead of two. Every entry comes from one event of its wallet
-- (a CallBilled, a DeliveryAttempted, a CreditsPurchased), so the event's stream version identifies
-- it within the wallet: the key (wallet_id, version, expires_at) is unique and also serves "newest
-- first" (read backwards), which the second index did. Each call's log entry now updates one index.
alter table call_logs drop constraint call_logs_pkey;
drop index call_logs_newest_idx;
alter table call_logs add primary key (wallet_id, version, expires_at);
