-- The rate limit of the free views (GET /token/ledger and /token/usage): the times of each
-- wallet's latest counted calls, a JSON array of at most 30 ISO times, oldest first.
create table view_calls (
  wallet_id text  primary key,
  recent    jsonb not null
);
