// Remembered answers of calls made with an Idempotency-Key, for 24 hours (CONTRACT section 1).
import type { Queryable } from "../src/db/connect.ts";
import { type Projection, rowRead } from "./projection.ts";

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

export interface IdempotentReplyRow {
  wallet_id: string;
  key: string;
  fingerprint: string;
  status: number;
  content_type: string;
  body: string;
  cost: number;
  balance: number;
  expires_at: Date;
}

export const idempotentRepliesProjection: Projection<IdempotentReplyRow> = {
  table: "idempotent_replies",
  columns: [
    "wallet_id",
    "key",
    "fingerprint",
    "status",
    "content_type",
    "body",
    "cost",
    "balance",
    "expires_at",
  ],
  keyColumns: ["wallet_id", "key"],
  keyOf: (event) =>
    event.type === "CallBilled" && event.data.idempotency
      ? JSON.stringify([event.walletId, event.data.idempotency.key])
      : null,
  evolve(_row, event) {
    if (event.type !== "CallBilled" || !event.data.idempotency) return undefined;
    const reply = event.data.idempotency;
    return {
      wallet_id: event.walletId,
      key: reply.key,
      fingerprint: reply.fingerprint,
      status: reply.status,
      content_type: reply.contentType,
      body: reply.body,
      cost: event.data.cost,
      balance: event.data.balance,
      expires_at: new Date(event.recordedAt.getTime() + IDEMPOTENCY_WINDOW_MS),
    };
  },
  keyRow: (event) => ({
    wallet_id: event.walletId,
    key: (event.data as { idempotency: { key: string } }).idempotency.key,
  }),
  readsPrevious: false,
  liveFilter: "expires_at > now()",
};

/** The live reply kept for an Idempotency-Key, as a ledger read (the ledger declares it itself). */
export const idempotentReplyRead = rowRead<{ walletId: string; key: string }, IdempotentReplyRow>(
  idempotentRepliesProjection,
  {
    name: "idempotent reply",
    id: ({ walletId, key }) => JSON.stringify([walletId, key]),
    async load(sql, keys, now) {
      const rows = await sql<IdempotentReplyRow[]>`
        select r.* from unnest(${keys.map((k) => k.walletId)}::text[], ${
        keys.map((k) => k.key)
      }::text[]) as x(w, k)
        cross join lateral (select * from idempotent_replies e
                            where e.wallet_id = x.w and e.key = x.k and e.expires_at > ${now}) r`;
      return new Map(rows.map((row) => [JSON.stringify([row.wallet_id, row.key]), row]));
    },
  },
);

export async function findIdempotentReply(
  sql: Queryable,
  walletId: string,
  key: string,
  now: Date,
): Promise<IdempotentReplyRow | undefined> {
  const [row] = await sql<IdempotentReplyRow[]>`
    select * from idempotent_replies where wallet_id = ${walletId} and key = ${key} and expires_at > ${now}`;
  return row;
}

export async function sweepExpiredReplies(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from idempotent_replies where expires_at <= ${now} returning 1`;
  return rows.length;
}
