// The key-value read model: the live value of each (bucket, key) with its expiry.
import type { Queryable } from "../src/db/connect.ts";
import { type Projection, rowRead } from "./projection.ts";

export interface KvRow {
  wallet_id: string;
  bucket: string;
  key: string;
  value: string;
  expires_at: Date;
}

export const kvProjection: Projection<KvRow> = {
  table: "kv_entries",
  columns: ["wallet_id", "bucket", "key", "value", "expires_at"],
  keyColumns: ["wallet_id", "bucket", "key"],
  keyOf(event) {
    if (event.type !== "KvWritten" && event.type !== "KvDeleted") return null;
    return JSON.stringify([event.walletId, event.data.bucket, event.data.key]);
  },
  evolve(_row, event) {
    if (event.type === "KvWritten") {
      const { bucket, key, value, expiresAt } = event.data;
      return { wallet_id: event.walletId, bucket, key, value, expires_at: new Date(expiresAt) };
    }
    return undefined;
  },
  keyRow: (event) => ({
    wallet_id: event.walletId,
    bucket: (event.data as { bucket: string }).bucket,
    key: (event.data as { key: string }).key,
  }),
  readsPrevious: false,
  liveFilter: "expires_at > now()",
  removedWithWallet: true,
};

/** The live value of a key, or undefined when it is missing or expired. */
export async function readKv(
  sql: Queryable,
  walletId: string,
  bucket: string,
  key: string,
  now: Date,
): Promise<string | undefined> {
  const [row] = await sql<{ value: string }[]>`
    select value from kv_entries
    where wallet_id = ${walletId} and bucket = ${bucket} and key = ${key} and expires_at > ${now}`;
  return row?.value;
}

export interface KvEntryKey {
  walletId: string;
  bucket: string;
  key: string;
}

/** A live entry as a ledger read: the entries of a whole batch are loaded in one query. */
export const kvEntryRead = rowRead<KvEntryKey, KvRow>(kvProjection, {
  name: "kv entry",
  id: ({ walletId, bucket, key }) => JSON.stringify([walletId, bucket, key]),
  async load(sql, keys, now) {
    // A lateral lookup per key: the primary key's index, whatever the planner guesses of the list.
    const rows = await sql<KvRow[]>`
      select kv.* from unnest(${keys.map((k) => k.walletId)}::text[], ${keys.map((k) => k.bucket)}::text[],
                              ${keys.map((k) => k.key)}::text[]) as x(w, b, k)
      cross join lateral (select * from kv_entries e
                          where e.wallet_id = x.w and e.bucket = x.b and e.key = x.k and e.expires_at > ${now}) kv`;
    return new Map(rows.map((row) => [JSON.stringify([row.wallet_id, row.bucket, row.key]), row]));
  },
});

/** Removes expired entries; they already read as missing, this only reclaims space. */
export async function sweepExpiredKv(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from kv_entries where expires_at <= ${now} returning 1`;
  return rows.length;
}
