// Remembered answers of calls made with an Idempotency-Key, for 24 hours (CONTRACT section 1), one
// per caller: the wallet token's (key_id "") and each scoped key's are kept apart, so no caller's
// key ever meets another's answer.
import type { Queryable } from "../src/db/connect.ts";
import { defineProjection, rowRead } from "./projection.ts";

export const IDEMPOTENCY_WINDOW_MS = 24 * 3600 * 1000;

export interface IdempotentReplyRow {
  wallet_id: string;
  /** The scoped key that made the call; "": the wallet token. */
  key_id: string;
  key: string;
  fingerprint: string;
  status: number;
  content_type: string;
  body: string;
  cost: number;
  balance: number;
  expires_at: Date;
}

export const idempotentRepliesProjection = defineProjection<IdempotentReplyRow>({
  table: "idempotent_replies",
  columns: [
    "wallet_id",
    "key_id",
    "key",
    "fingerprint",
    "status",
    "content_type",
    "body",
    "cost",
    "balance",
    "expires_at",
  ],
  keyColumns: ["wallet_id", "key_id", "key"],
  keyRow: (event) =>
    event.type === "CallBilled" && event.data.idempotency
      ? replyKey({ walletId: event.walletId, keyId: event.data.keyId, key: event.data.idempotency.key })
      : null,
  evolve(_row, event) {
    if (event.type !== "CallBilled" || !event.data.idempotency) return undefined;
    const reply = event.data.idempotency;
    return {
      wallet_id: event.walletId,
      key_id: event.data.keyId ?? "",
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
  readsPrevious: false,
  liveFilter: "expires_at > now()",
});

/** Whose Idempotency-Key: the wallet's, and the scoped key that sent it (absent: the token). */
export interface ReplyOwner {
  walletId: string;
  keyId?: string;
  key: string;
}

/** The row's key columns: the token's replies are kept under key_id "". */
function replyKey(
  { walletId, keyId, key }: ReplyOwner,
): Pick<IdempotentReplyRow, "wallet_id" | "key_id" | "key"> {
  return { wallet_id: walletId, key_id: keyId ?? "", key };
}

/** The live reply kept for a caller's Idempotency-Key, as a ledger read (the ledger declares it itself). */
export const idempotentReplyRead = rowRead<ReplyOwner, IdempotentReplyRow>(
  idempotentRepliesProjection,
  {
    name: "idempotent reply",
    keyRow: replyKey,
    async load(sql, keys, now) {
      return await sql<IdempotentReplyRow[]>`
        select r.* from unnest(${keys.map((k) => k.walletId)}::text[], ${
        keys.map((k) => k.keyId ?? "")
      }::text[],
                               ${keys.map((k) => k.key)}::text[]) as x(w, i, k)
        cross join lateral (select * from idempotent_replies e
                            where e.wallet_id = x.w and e.key_id = x.i and e.key = x.k and e.expires_at > ${now}) r`;
    },
  },
);

/** The wallet token's live reply for an Idempotency-Key. */
export async function findIdempotentReply(
  sql: Queryable,
  { walletId, key, now }: { walletId: string; key: string; now: Date },
): Promise<IdempotentReplyRow | undefined> {
  const [row] = await sql<IdempotentReplyRow[]>`
    select * from idempotent_replies
    where wallet_id = ${walletId} and key_id = '' and key = ${key} and expires_at > ${now}`;
  return row;
}

export async function sweepExpiredReplies(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from idempotent_replies where expires_at <= ${now} returning 1`;
  return rows.length;
}
