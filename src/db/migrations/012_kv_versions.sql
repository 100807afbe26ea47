-- Each entry keeps the stream version of the event that last wrote it: the entry's ETag, which
-- changes on every write of the key (conditional writes). Existing rows take the version of their
-- last KvWritten, exactly what replaying the log gives them.
alter table kv_entries add column version integer;

update kv_entries kv
set version = last.version
from (
  select wallet_id, data->>'bucket' as bucket, data->>'key' as key, max(version) as version
  from events
  where type = 'KvWritten'
  group by 1, 2, 3
) last
where last.wallet_id = kv.wallet_id and last.bucket = kv.bucket and last.key = kv.key;

alter table kv_entries alter column version set not null;

-- Listing walks keys in code-point order whatever the database's locale: byte order of UTF-8 is
-- code-point order, and the primary key then serves the listing's range scans.
alter table kv_entries alter column key type text collate "C";
