// Confirmed payments per wallet, keyed by the provider's event id.
import { type Projection, rowRead } from "./projection.ts";

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

/** A confirmed payment as a ledger read: what makes a replayed confirmation a no-op. */
export const paymentRead = rowRead<{ walletId: string; paymentId: string }, PaymentRow>(paymentsProjection, {
  name: "payment",
  id: ({ walletId, paymentId }) => `${walletId}/${paymentId}`,
  async load(sql, keys) {
    const rows = await sql<PaymentRow[]>`
      select p.* from jsonb_to_recordset(${sql.json(keys)}) as x("walletId" text, "paymentId" text)
      join payments p on p.wallet_id = x."walletId" and p.payment_id = x."paymentId"`;
    return new Map(rows.map((row) => [`${row.wallet_id}/${row.payment_id}`, row]));
  },
});
