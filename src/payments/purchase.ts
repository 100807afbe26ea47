// Credits a confirmed payment to its wallet exactly once per provider event id: the check and the
// append happen under the wallet's row lock, so concurrent retries of one event serialize on it.
import type { Ledger } from "../ledger/ledger.ts";
import { newEvent } from "../../events/catalogue.ts";
import { paymentRecorded } from "../../projections/payments.ts";

export const TIER_CREDITS = { "1": 1_000_000, "3": 3_000_000 } as const;
export type Tier = keyof typeof TIER_CREDITS;

export type PurchaseOutcome = "credited" | "already credited" | "unknown wallet";

export async function creditPurchase(
  ledger: Ledger,
  purchase: { walletId: string; tier: Tier; paymentId: string },
): Promise<PurchaseOutcome> {
  let outcome: PurchaseOutcome = "unknown wallet";
  await ledger.append(purchase.walletId, async (tx, wallet) => {
    if (!wallet || wallet.deactivated_at) return [];
    if (await paymentRecorded(tx, wallet.wallet_id, purchase.paymentId)) {
      outcome = "already credited";
      return [];
    }
    outcome = "credited";
    const amount = TIER_CREDITS[purchase.tier];
    return [newEvent("CreditsPurchased", {
      amount,
      balance: wallet.balance + amount,
      tier: purchase.tier,
      paymentId: purchase.paymentId,
    })];
  });
  return outcome;
}
