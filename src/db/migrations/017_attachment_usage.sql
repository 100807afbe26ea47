-- Attachment storage per wallet (src/attachments/store.ts): the bytes of email attachments a wallet
-- has stored, one row per wallet and 12-hour range of expiry, so the acceptance of a mail reads a
-- handful of rows instead of summing the wallet's files. Written with the files in the transaction
-- that accepts the mail; partitioned like `attachments`, so each row leaves with the files it counts.
create table attachment_usage (
  wallet_id  text        not null,
  -- The last millisecond of the 12-hour range its files' expiry falls in.
  expires_at timestamptz not null,
  bytes      bigint      not null,
  primary key (wallet_id, expires_at)
) partition by range (expires_at);
create table attachment_usage_default partition of attachment_usage default;

-- Files stored before this migration, counted once.
insert into attachment_usage (wallet_id, expires_at, bytes)
select wallet_id,
       to_timestamp(floor(extract(epoch from expires_at) / 43200) * 43200 + 43200) - interval '1 millisecond',
       sum(size)
from attachments
where wallet_id <> 'service'
group by 1, 2;
