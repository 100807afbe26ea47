-- Alert email addresses are confirmed before any alert goes there (issue 23): whether the address is
-- confirmed, and the confirmation link last sent for it (the link's token is derived from the server
-- secret and the link id, so nothing secret is stored). Addresses saved before this migration were
-- never confirmed: they stay unconfirmed, as a replay of the log makes them, and get no alerts until
-- their owner saves them again and opens the link then sent.
alter table wallet_settings
  add column low_balance_email_confirmed boolean not null default false,
  add column email_link_id               text,
  add column email_link_expires_at       timestamptz;

update wallets set alert_email = false where alert_email;
