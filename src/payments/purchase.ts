// Credits a confirmed payment to its wallet exactly once per provider event id: the check and the
// append happen under the wallet's row lock, so concurrent retries of one event serialize on it.
import type { Ledger } from "../ledger/ledger.ts";
import type { UnbilledCommand } from "../ledger/command.ts";
import { newEvent } from "../../events/catalogue.ts";
import { paymentRead } from "../../projections/payments.ts";
import { read } from "../ledger/reads.ts";

export const TIER_CREDITS = { "1": 1_000_000, "3": 3_000_000 } as const;
export type Tier = keyof typeof TIER_CREDITS;

export type PurchaseOutcome = "credited" | "already credited" | "unknown wallet";

export interface Purchase {
  walletId: string;
  tier: Tier;
  paymentId: string;
}

/** The pure decision: CreditsPurchased once per payment id, for an active wallet. */
export function purchaseCommand(purchase: Purchase) {
  const reads = {
    payment: read(paymentRead, { walletId: purchase.walletId, paymentId: purchase.paymentId }),
  };
  const command: UnbilledCommand<PurchaseOutcome, typeof reads> = {
    walletId: purchase.walletId,
    reads,
    decide({ wallet, reads }) {
      if (!wallet || wallet.deactivated_at) return { outcome: "unknown wallet" };
      if (reads.payment) return { outcome: "already credited" };
      const amount = TIER_CREDITS[purchase.tier];
      return {
        outcome: "credited",
        events: [newEvent("CreditsPurchased", {
          amount,
          balance: wallet.balance + amount,
          tier: purchase.tier,
          paymentId: purchase.paymentId,
        })],
      };
    },
  };
  return command;
}

export function creditPurchase(ledger: Ledger, purchase: Purchase): Promise<PurchaseOutcome> {
  return ledger.appendUnbilled(purchaseCommand(purchase));
}
