-- Usage per wallet, UTC day and endpoint type (GET /token/usage), folded from the log like every
-- read model: calls, credits charged and errors, added to by each transaction in one upsert.
create table daily_usage (
  wallet_id text    not null,
  day       date    not null,
  type      text    not null,
  calls     integer not null,
  credits   bigint  not null,
  errors    integer not null,
  primary key (wallet_id, day, type)
);

-- Fill it from the log for wallets that existed before, so their history shows at once.
insert into daily_usage (wallet_id, day, type, calls, credits, errors)
select wallet_id, (recorded_at at time zone 'UTC')::date,
       case when type = 'CallBilled' and data->>'method' = 'CRON' then 'scheduled'
            when type = 'CallBilled' then data->>'endpoint'
            when type = 'DeliveryAttempted' then 'webhook-delivery'
            else 'payment' end,
       count(*),
       coalesce(sum(case when type = 'CallBilled' then (data->>'cost')::bigint else 0 end), 0),
       count(*) filter (where (type = 'CallBilled' and (data->>'status')::int >= 400)
                          or (type = 'DeliveryAttempted' and not (data->>'ok')::boolean))
from events
where type in ('CallBilled', 'DeliveryAttempted', 'CreditsPurchased')
  and wallet_id in (select wallet_id from wallets where deactivated_at is null)
group by 1, 2, 3;
