-- Retention by time partitions: call logs and attachments are partitioned by their expiry, so the
-- sweep drops whole expired partitions (src/db/partitions.ts) instead of deleting row by row.
-- A partitioned table's unique keys must hold the partition column: (wallet_id, id) becomes
-- (wallet_id, id, expires_at), still led by wallet_id. The existing rows are kept: they land in
-- the catch-all partition and move into dated partitions as the sweep creates them.

alter table call_logs rename to call_logs_unpartitioned;
alter index call_logs_pkey rename to call_logs_unpartitioned_pkey;
alter index call_logs_newest_idx rename to call_logs_unpartitioned_newest_idx;

create table call_logs (
  wallet_id        text        not null,
  id               text        not null,
  version          integer     not null,      -- the event's stream version: newest first
  method           text        not null,
  path             text        not null,
  endpoint         text        not null,
  status_code      integer     not null,
  error            text,
  cost             integer     not null,
  balance          bigint      not null,
  response_time_ms integer     not null,
  at               timestamptz not null,
  expires_at       timestamptz not null,
  primary key (wallet_id, id, expires_at)
) partition by range (expires_at);
-- No expiry index: the partition bounds are the expiry index.
create index call_logs_newest_idx on call_logs (wallet_id, version desc);
-- Rows outside every dated partition (none in normal running: partitions exist days ahead).
create table call_logs_default partition of call_logs default;

insert into call_logs select * from call_logs_unpartitioned;
drop table call_logs_unpartitioned;

alter table attachments rename to attachments_unpartitioned;
alter index attachments_pkey rename to attachments_unpartitioned_pkey;

create table attachments (
  wallet_id    text        not null,
  id           text        not null,
  filename     text        not null,
  content_type text        not null,
  size         integer     not null,
  content      bytea       not null,
  created_at   timestamptz not null,
  expires_at   timestamptz not null,
  primary key (wallet_id, id, expires_at)
) partition by range (expires_at);
create table attachments_default partition of attachments default;
-- The service's own files never expire (year 9999): their partition has no upper bound, so the
-- sweep, which drops only partitions whose upper bound is past, never drops it.
create table attachments_forever partition of attachments for values from ('9999-01-01 00:00:00+00') to (maxvalue);

insert into attachments select * from attachments_unpartitioned;
drop table attachments_unpartitioned;
