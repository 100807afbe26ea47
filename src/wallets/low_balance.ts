// Low-balance alerts (issue 6): when a debit leaves the balance below the wallet's threshold, one
// alert per episode goes to the configured webhook and email, through the delivery outbox. The
// episode ends when the balance is back at the threshold (the wallet fold resets the latch).
import type { Queryable } from "../db/connect.ts";
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import { findWalletSettings } from "../../projections/wallet_settings.ts";
import { enqueueDelivery } from "../webhooks/outbox.ts";

/** Outbox targets of alerts; `@` keeps them apart from every webhookId a client can choose. */
export const ALERT_WEBHOOK_ID = "@low-balance";
export const ALERT_EMAIL_ID = "@low-balance-email";

/** The raw alert body (a webhook without `format`) and the context of custom templates. */
export interface LowBalancePayload {
  wallet: number;
  threshold: number;
  token_hash: string;
}

/** Whether the debit that leaves `balance` starts a low-balance episode. Pure. */
export function startsLowBalanceEpisode(wallet: WalletRow, balance: number, charge: number): boolean {
  return charge > 0 && wallet.low_balance_threshold > 0 && !wallet.low_balance_alerted &&
    balance < wallet.low_balance_threshold;
}

/** Queues the alert deliveries in the caller's transaction and returns the event that records the alert. */
export async function raiseLowBalanceAlert(
  tx: Queryable,
  wallet: WalletRow,
  balance: number,
  now: Date,
): Promise<NewEvent> {
  const threshold = wallet.low_balance_threshold;
  const payload: LowBalancePayload = { wallet: balance, threshold, token_hash: wallet.wallet_id };
  const settings = await findWalletSettings(tx, wallet.wallet_id);
  const channels: ("webhook" | "email")[] = [];
  const enqueue = (webhookId: string) =>
    enqueueDelivery(tx, {
      walletId: wallet.wallet_id,
      webhookId,
      kind: "alert",
      payload: { ...payload },
      cost: 0,
      now,
    });
  if (settings?.low_balance_webhook) {
    await enqueue(ALERT_WEBHOOK_ID);
    channels.push("webhook");
  }
  if (settings?.low_balance_email) {
    await enqueue(ALERT_EMAIL_ID);
    channels.push("email");
  }
  return newEvent("LowBalanceAlerted", { threshold, balance, channels });
}
