// Confirmed payments per wallet, keyed by the provider's event id.
import { defineProjection, rowRead } from "./projection.ts";

export interface PaymentRow {
  wallet_id: string;
  payment_id: string;
  tier: string;
  amount: number;
  paid_at: Date;
}

export const paymentsProjection = defineProjection<PaymentRow>({
  table: "payments",
  // Money: an erased wallet's payments stay, as its balance does.
  keptWhenErased: true,
  columns: ["wallet_id", "payment_id", "tier", "amount", "paid_at"],
  keyColumns: ["wallet_id", "payment_id"],
  keyRow: (event) =>
    event.type === "CreditsPurchased"
      ? { wallet_id: event.walletId, payment_id: event.data.paymentId }
      : null,
  evolve(_row, event) {
    if (event.type !== "CreditsPurchased") return undefined;
    const { paymentId, tier, amount } = event.data;
    return { wallet_id: event.walletId, payment_id: paymentId, tier, amount, paid_at: event.recordedAt };
  },
  readsPrevious: false,
});

/** A confirmed payment as a ledger read: what makes a replayed confirmation a no-op. */
export const paymentRead = rowRead<{ walletId: string; paymentId: string }, PaymentRow>(paymentsProjection, {
  name: "payment",
  keyRow: ({ walletId, paymentId }) => ({ wallet_id: walletId, payment_id: paymentId }),
  async load(sql, keys) {
    return await sql<PaymentRow[]>`
      select p.* from unnest(${keys.map((k) => k.walletId)}::text[], ${
      keys.map((k) => k.paymentId)
    }::text[]) as x(w, id)
      cross join lateral (select * from payments e where e.wallet_id = x.w and e.payment_id = x.id) p`;
  },
});
