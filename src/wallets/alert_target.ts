// Where a low-balance alert goes: the wallet's low_balance_webhook, seen by the delivery worker
// as a webhook (URL, headers, format, signing key) so alerts share delivery, signing and retries.
import type { Queryable } from "../db/connect.ts";
import type { WebhookRow } from "../../projections/webhooks.ts";
import { findWalletSettings } from "../../projections/wallet_settings.ts";
import { ALERT_WEBHOOK_ID } from "./low_balance.ts";

export async function findAlertWebhook(sql: Queryable, walletId: string): Promise<WebhookRow | undefined> {
  const settings = await findWalletSettings(sql, walletId);
  const webhook = settings?.low_balance_webhook;
  if (!settings || !webhook) return undefined;
  return {
    wallet_id: walletId,
    webhook_id: ALERT_WEBHOOK_ID,
    url: webhook.url,
    headers: webhook.headers,
    format: webhook.format || null,
    template: webhook.template ?? null,
    options: webhook.options,
    include_attachments: false,
    schedule_cron: null,
    schedule_timezone: null,
    schedule_active: null,
    email: null,
    secret: settings.alert_secret,
    created_at: new Date(0),
  };
}

export async function findAlertEmail(sql: Queryable, walletId: string): Promise<string | undefined> {
  return (await findWalletSettings(sql, walletId))?.low_balance_email ?? undefined;
}
