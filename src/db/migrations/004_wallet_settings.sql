-- Low-balance alerts: the threshold and the alert latch live on the wallet row, which the ledger
-- holds locked anyway; the alert targets live in their own read model.
alter table wallets
  add column low_balance_threshold bigint  not null default 0,
  add column low_balance_alerted   boolean not null default false;

create table wallet_settings (
  wallet_id             text   primary key,
  low_balance_threshold bigint not null,
  low_balance_webhook   jsonb,            -- {url, headers, format, template, options}
  low_balance_email     text,
  alert_secret          text   not null   -- signs alert deliveries (Standard Webhooks)
);
