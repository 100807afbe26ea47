-- Where a wallet's low-balance alert goes lives on the wallet row beside the threshold and the
-- latch, so the debit that starts an episode decides its alert from the locked row alone.
alter table wallets
  add column alert_webhook boolean not null default false,
  add column alert_email   boolean not null default false;

update wallets w
set alert_webhook = s.low_balance_webhook is not null and s.low_balance_webhook <> 'null'::jsonb,
    alert_email   = s.low_balance_email is not null
from wallet_settings s
where s.wallet_id = w.wallet_id;

-- An alert's target is its kind, not a sentinel webhook id: alert deliveries have no webhook.
alter table webhook_deliveries alter column webhook_id drop not null;
update webhook_deliveries
set kind = case webhook_id when '@low-balance-email' then 'alert_email' else 'alert_webhook' end,
    webhook_id = null
where kind = 'alert';
