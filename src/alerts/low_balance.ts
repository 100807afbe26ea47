// Low-balance alerts: the debit that leaves the balance below the wallet's threshold starts an
// episode, with one alert to the configured webhook and email through the delivery outbox. The
// episode ends when the balance is back at the threshold (the wallet fold resets the latch). A
// debit rule, plugged into the ledger: pure, from the locked wallet row alone.
import { z } from "zod";
import { type NewEvent, newEvent } from "../../events/catalogue.ts";
import type { WalletRow } from "../../projections/wallets.ts";
import type { DebitRule } from "../ledger/command.ts";
import { type NewDelivery, queueDelivery } from "../webhooks/mod.ts";

/** The raw alert body (a webhook without `format`) and the context of custom templates. */
export const LowBalancePayload = z.object({
  wallet: z.number().int(),
  threshold: z.number().int(),
  token_hash: z.string(),
});
export type LowBalancePayload = z.infer<typeof LowBalancePayload>;

/** Whether the debit that leaves `balance` starts a low-balance episode. */
export function startsLowBalanceEpisode(wallet: WalletRow, balance: number, charge: number): boolean {
  return charge > 0 && wallet.low_balance_threshold > 0 && !wallet.low_balance_alerted &&
    balance < wallet.low_balance_threshold;
}

export interface AlertIds {
  /** A fresh outbox row id and message id for each alert sent. */
  newDeliveryId(): string;
  newMessageId(): string;
}

/** The rule, with the id sources its deliveries take. */
export function lowBalanceRule(ids: AlertIds): DebitRule {
  return {
    afterDebit(wallet, { charge, balance }) {
      if (!startsLowBalanceEpisode(wallet, balance, charge)) return undefined;
      const threshold = wallet.low_balance_threshold;
      const payload: LowBalancePayload = { wallet: balance, threshold, token_hash: wallet.wallet_id };
      const kinds: Extract<NewDelivery["kind"], `alert_${string}`>[] = [];
      if (wallet.alert_webhook) kinds.push("alert_webhook");
      if (wallet.alert_email) kinds.push("alert_email");
      const alerted: NewEvent = newEvent("LowBalanceAlerted", {
        threshold,
        balance,
        channels: kinds.map((kind) => kind === "alert_webhook" ? "webhook" : "email"),
      });
      return {
        events: [alerted],
        effects: kinds.map((kind) =>
          queueDelivery({
            kind,
            id: ids.newDeliveryId(),
            walletId: wallet.wallet_id,
            messageId: ids.newMessageId(),
            cost: 0,
            payload: { ...payload },
          })
        ),
      };
    },
  };
}
