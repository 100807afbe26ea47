-- Issue 27: a resumed webhook's held emails go out strictly oldest first, the one in flight at the
-- pause included. The resume marks the rows it releases; a marked row is not claimed while an
-- older marked row of its webhook is still waiting, in flight or planned for a retry, so they go
-- one at a time, in creation order. A row's mark goes when it is finished (delivered, failed for
-- good, abandoned) or held again. Only the waiting backlog is marked: the index stays that small.
alter table webhook_deliveries add column resumed boolean not null default false;
create index webhook_deliveries_resumed_idx on webhook_deliveries (wallet_id, webhook_id, created_at, id)
  where resumed;
