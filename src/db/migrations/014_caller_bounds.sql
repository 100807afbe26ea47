-- Issue 21. Each wallet's allowance of free calls (calls that charge nothing: free routes, 402s,
-- refusals), counted per UTC minute and per UTC day from the CallBilled events that charged 0, and
-- of refused mail per UTC day, so the permanent log never grows without being paid for
-- (projections/wallets.ts). And an
-- Idempotency-Key's kept answer belongs to the caller that made it: the wallet token (key_id '') or
-- one scoped key, so a key's requests never meet the token's or another key's.

alter table wallets
  add column free_minute      integer not null default 0,  -- minutes since the epoch of the counted calls
  add column free_minute_calls integer not null default 0,
  add column free_day         integer not null default 0,  -- UTC days since the epoch
  add column free_day_calls   integer not null default 0,
  -- mail refused for the wallet (a 402 or 554 entry in its call log), counted per UTC day apart from
  -- the calls, so a stranger's mail never spends the owner's allowance of free calls
  add column refused_mail_day       integer not null default 0,
  add column refused_mail_day_calls integer not null default 0;

alter table idempotent_replies add column key_id text not null default '';
alter table idempotent_replies drop constraint idempotent_replies_pkey;
alter table idempotent_replies add primary key (wallet_id, key_id, key);
