// Confirmed payments per wallet, keyed by the provider's event id.
import type { Queryable } from "../src/db/connect.ts";
import type { Projection } from "./projection.ts";

export interface PaymentRow {
  wallet_id: string;
  payment_id: string;
  tier: string;
  amount: number;
  paid_at: Date;
}

export const paymentsProjection: Projection<PaymentRow> = {
  table: "payments",
  columns: ["wallet_id", "payment_id", "tier", "amount", "paid_at"],
  keyColumns: ["wallet_id", "payment_id"],
  keyOf: (event) => event.type === "CreditsPurchased" ? `${event.walletId}/${event.data.paymentId}` : null,
  evolve(_row, event) {
    if (event.type !== "CreditsPurchased") return undefined;
    const { paymentId, tier, amount } = event.data;
    return { wallet_id: event.walletId, payment_id: paymentId, tier, amount, paid_at: event.recordedAt };
  },
  readsPrevious: false,
  async save(tx, _event, row) {
    if (!row) return;
    await tx`insert into payments (wallet_id, payment_id, tier, amount, paid_at)
      values (${row.wallet_id}, ${row.payment_id}, ${row.tier}, ${row.amount}, ${row.paid_at})`;
  },
};

export async function paymentRecorded(sql: Queryable, walletId: string, paymentId: string): Promise<boolean> {
  const rows = await sql`select 1 from payments where wallet_id = ${walletId} and payment_id = ${paymentId}`;
  return rows.length > 0;
}
