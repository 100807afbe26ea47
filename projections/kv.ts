// The key-value read model: the live value of each (bucket, key) with its expiry.
import type { Queryable } from "../src/db/connect.ts";
import type { Projection } from "./projection.ts";

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
  readsPrevious: false,
  async save(tx, event, row) {
    if (row) {
      await tx`
        insert into kv_entries (wallet_id, bucket, key, value, expires_at)
        values (${row.wallet_id}, ${row.bucket}, ${row.key}, ${row.value}, ${row.expires_at})
        on conflict (wallet_id, bucket, key) do update set value = excluded.value, expires_at = excluded.expires_at`;
    } else if (event.type === "KvDeleted") {
      await tx`delete from kv_entries
        where wallet_id = ${event.walletId} and bucket = ${event.data.bucket} and key = ${event.data.key}`;
    }
  },
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

/** A KV entry's identity across wallets, as the ledger's batch snapshot keys it. */
export function kvEntryKey(walletId: string, bucket: string, key: string): string {
  return JSON.stringify([walletId, bucket, key]);
}

/**
 * The live values of many entries in one query: every asked key maps to its value, or to null
 * when it is missing or expired.
 */
export async function readKvMany(
  sql: Queryable,
  entries: { walletId: string; bucket: string; key: string }[],
  now: Date,
): Promise<Map<string, string | null>> {
  const found = new Map<string, string | null>(
    entries.map((e) => [kvEntryKey(e.walletId, e.bucket, e.key), null]),
  );
  if (entries.length === 0) return found;
  const rows = await sql<{ wallet_id: string; bucket: string; key: string; value: string }[]>`
    select kv.wallet_id, kv.bucket, kv.key, kv.value
    from jsonb_to_recordset(${sql.json(entries as any)}) as x("walletId" text, bucket text, key text)
    join kv_entries kv on kv.wallet_id = x."walletId" and kv.bucket = x.bucket and kv.key = x.key
    where kv.expires_at > ${now}`;
  for (const row of rows) found.set(kvEntryKey(row.wallet_id, row.bucket, row.key), row.value);
  return found;
}

/** Removes expired entries; they already read as missing, this only reclaims space. */
export async function sweepExpiredKv(sql: Queryable, now: Date): Promise<number> {
  const rows = await sql`delete from kv_entries where expires_at <= ${now} returning 1`;
  return rows.length;
}
